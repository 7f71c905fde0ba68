"""What the suite knows about each of its tests: test id, kind, area, apis, markers.

The test id is what expectation and spec-defect patterns match and what reports
list (see ``expectations``): a doc example's manifest id, else the node id relative
to the ``spec`` folder.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from .docsuite import DocCase

SPEC_ROOT = Path(__file__).parent / "spec"
KINDS = {"properties": "property", "differential": "differential", "signatures": "signature", "errors": "error"}
_BOOKKEEPING_MARKERS = {"parametrize", "area", "apis", "documented", "usefixtures", "filterwarnings", "timeout"}
_SPEC_PREFIX = "nnx_conformance/spec/"
DOCS_MODULE = SPEC_ROOT / "test_docs.py"


@dataclass(frozen=True)
class ItemInfo:
    """A suite test as the report and the pattern files see it."""

    id: str
    nodeid: str
    kind: str
    area: str
    apis: tuple[str, ...]
    markers: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ItemInfo:
        return cls(**{**data, "apis": tuple(data["apis"]), "markers": tuple(data["markers"])})


def in_suite(item: pytest.Item) -> bool:
    return Path(item.path).is_relative_to(SPEC_ROOT)


def doc_case(item: pytest.Item) -> DocCase | None:
    callspec = getattr(item, "callspec", None)
    case = None if callspec is None else callspec.params.get("doc_example")
    return case if isinstance(case, DocCase) else None


def describe(item: pytest.Item) -> ItemInfo:
    """The test id, kind, area, apis and markers of a suite test."""
    relative = Path(item.path).relative_to(SPEC_ROOT).as_posix()
    markers = tuple(sorted({m.name for m in item.iter_markers()} - _BOOKKEEPING_MARKERS))
    case = doc_case(item)
    if case is not None:
        area = case.page.id if case.page is not None else "docs"
        apis = case.entry.apis if case.entry is not None else ()
        return ItemInfo(case.test_id, item.nodeid, "doc", area, apis, markers)
    area_marker = item.get_closest_marker("area")
    area = str(area_marker.args[0]) if area_marker and area_marker.args else Path(item.path).stem.removeprefix("test_")
    apis = tuple(str(name) for m in item.iter_markers("apis") for name in m.args)
    kind = KINDS.get(relative.partition("/")[0], "other")
    _, _, name = item.nodeid.partition("::")
    return ItemInfo(f"{relative}::{name}", item.nodeid, kind, area, apis, markers)


def _doc_example_id(nodeid: str) -> str | None:
    """The example id in a doc test's node id (``...test_docs.py::test_doc[<id>@L<line>]``)."""
    path, _, name = nodeid.rpartition("::")
    if not (path.endswith(DOCS_MODULE.name) or not path) or not name.startswith("test_doc[") or "@L" not in name:
        return None
    return name[len("test_doc["): name.rindex("@L")]


def in_suite_nodeid(nodeid: str) -> bool:
    """Whether a node id is a suite test's (when the package lies outside the rootdir, a doc
    test's node id is only ``::test_doc[...]``)."""
    return _SPEC_PREFIX in nodeid or _doc_example_id(nodeid) is not None


def doc_page_of(nodeid: str) -> str | None:
    """The page (report area) of a doc test's node id; None for another test."""
    example = _doc_example_id(nodeid)
    return None if example is None else example.rpartition("/")[0] or "docs"


def describe_nodeid(nodeid: str) -> ItemInfo:
    """What a node id alone tells of a suite test (for a test whose process died before
    it could say more): its id, kind and area."""
    example, page = _doc_example_id(nodeid), doc_page_of(nodeid)
    if example is not None and page is not None:
        return ItemInfo(example, nodeid, "doc", page, (), ())
    relative = nodeid[nodeid.index(_SPEC_PREFIX) + len(_SPEC_PREFIX):]
    path, _, _ = relative.partition("::")
    kind = KINDS.get(path.partition("/")[0], "other")
    return ItemInfo(relative, nodeid, kind, Path(path).stem.removeprefix("test_"), (), ())
