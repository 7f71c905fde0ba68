"""What the suite knows about each of its tests: test id, kind, area, apis, markers.

The test id is what expectation and spec-defect patterns match and what reports
list (see ``expectations``): a doc example's manifest id, else the node id relative
to the ``spec`` folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from .docsuite import DocCase

SPEC_ROOT = Path(__file__).parent / "spec"
KINDS = {"properties": "property", "differential": "differential", "signatures": "signature", "errors": "error"}
_BOOKKEEPING_MARKERS = {"parametrize", "area", "apis", "documented", "usefixtures", "filterwarnings"}


@dataclass(frozen=True)
class ItemInfo:
    """A suite test as the report and the pattern files see it."""

    id: str
    nodeid: str
    kind: str
    area: str
    apis: tuple[str, ...]
    markers: tuple[str, ...]


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
