"""What the suite knows about each of its tests: test id, kind, area, apis, markers.

The test id is what expectation and spec-defect patterns match and what reports
list (see ``expectations``): a doc example's manifest id, else the node id relative
to the ``spec`` folder. A hand-written test's area is its folder under ``spec``
(``spec/<area>/test_<topic>.py``), or the finer one an ``area`` marker names; its kind
is what its ``kind`` marker says.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from .docsuite import DocCase

SPEC_ROOT = Path(__file__).parent / "spec"
KINDS = ("property", "differential", "signature", "error")
"""The kinds of hand-written test; ``pytest.mark.kind(name)`` on a module or test says which."""
UNMARKED_KIND = "other"
"""The kind of a hand-written test without a ``kind`` marker."""
_BOOKKEEPING_MARKERS = {"parametrize", "area", "apis", "documented", "kind", "usefixtures", "filterwarnings", "timeout"}
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


@functools.cache
def _spec_relative(path: str) -> str | None:
    """A test file's path relative to ``spec``, with forward slashes; None for a file outside it
    (computed once per file: the suite asks it of each of its thousands of tests)."""
    found = Path(path)
    return found.relative_to(SPEC_ROOT).as_posix() if found.is_relative_to(SPEC_ROOT) else None


def in_suite(item: pytest.Item) -> bool:
    return _spec_relative(os.fspath(item.path)) is not None


def doc_case(item: pytest.Item) -> DocCase | None:
    callspec = getattr(item, "callspec", None)
    case = None if callspec is None else callspec.params.get("doc_example")
    return case if isinstance(case, DocCase) else None


def folder_area(relative: str) -> str:
    """The area a hand-written test's path relative to ``spec`` gives it: its folder."""
    folder, _, rest = relative.partition("/")
    return folder if rest else Path(folder).stem.removeprefix("test_")


def _first_arg(markers: Iterable[pytest.Mark], name: str, default: str) -> str:
    """The first argument of the closest ``name`` marker among ``markers`` (closest first)."""
    found = next((m for m in markers if m.name == name and m.args), None)
    return default if found is None else str(found.args[0])


def describe(item: pytest.Item) -> ItemInfo:
    """The test id, kind, area, apis and markers of a suite test."""
    relative = _spec_relative(os.fspath(item.path))
    assert relative is not None, f"{item.nodeid} is not a suite test"
    markers = tuple(sorted({m.name for m in item.iter_markers()} - _BOOKKEEPING_MARKERS))
    case = doc_case(item)
    if case is not None:
        area = case.page.id if case.page is not None else "docs"
        apis = case.entry.apis if case.entry is not None else ()
        return ItemInfo(case.test_id, item.nodeid, "doc", area, apis, markers)
    area = _first_arg(item.iter_markers("area"), "area", folder_area(relative))
    kind = _first_arg(item.iter_markers("kind"), "kind", UNMARKED_KIND)
    apis = tuple(str(name) for m in item.iter_markers("apis") for name in m.args)
    _, _, name = item.nodeid.partition("::")
    return ItemInfo(f"{relative}::{name}", item.nodeid, kind, area, apis, markers)


def _doc_example_id(nodeid: str) -> str | None:
    """The example id in a doc test's node id (``...test_docs.py::test_doc[<id>@L<line>]``)."""
    path, _, name = nodeid.rpartition("::")
    if not (path.endswith(DOCS_MODULE.name) or not path) or not name.startswith("test_doc[") or "@L" not in name:
        return None
    return name[len("test_doc[") : name.rindex("@L")]


def in_suite_nodeid(nodeid: str) -> bool:
    """Whether a node id is a suite test's (when the package lies outside the rootdir, a doc
    test's node id is only ``::test_doc[...]``)."""
    return _SPEC_PREFIX in nodeid or _doc_example_id(nodeid) is not None


def doc_page_of(nodeid: str) -> str | None:
    """The page (report area) of a doc test's node id; None for another test."""
    example = _doc_example_id(nodeid)
    return None if example is None else example.rpartition("/")[0] or "docs"


def suite_test_id(nodeid: str) -> str:
    """The test id of a suite test's node id, without collecting it."""
    example = _doc_example_id(nodeid)
    return example if example is not None else nodeid[nodeid.index(_SPEC_PREFIX) + len(_SPEC_PREFIX) :]


def _marks_of(obj: object) -> list[pytest.Mark]:
    marks = getattr(obj, "pytestmark", [])
    return list(marks) if isinstance(marks, list) else [marks]


def _param_marks(marks: list[pytest.Mark], param_id: str) -> Iterator[pytest.Mark]:
    """The marks of the ``pytest.param`` sets, among ``marks``' parametrizations, whose id
    is one of the dash-joined parts of the node id's ``param_id``."""
    for mark in marks:
        if mark.name != "parametrize" or len(mark.args) < 2:
            continue
        for value in mark.args[1]:
            if getattr(value, "id", None) and f"-{value.id}-" in f"-{param_id}-":
                yield from value.marks


def declared_marks(relative: str) -> list[pytest.Mark]:
    """The marks a hand-written test declares (``relative``: its node id relative to ``spec``),
    closest first, read from its module: those of its pytest.param sets, its function, its
    classes and its module's ``pytestmark``. Empty when the module does not import."""
    path, _, name = relative.partition("::")
    name, _, param_id = name.partition("[")
    try:
        obj: object = importlib.import_module("nnx_conformance.spec." + path.removesuffix(".py").replace("/", "."))
    except Exception:  # noqa: BLE001 - the test will not be described beyond its path
        return []
    chain = [obj]
    for part in name.split("::"):
        obj = getattr(obj, part, None)
        chain.append(obj)
    marks = [mark for owner in reversed(chain) for mark in _marks_of(owner)]
    return [*_param_marks(marks, param_id.removesuffix("]")), *marks] if param_id else marks


def describe_nodeid(nodeid: str) -> ItemInfo:
    """What a node id tells of a suite test whose process died before it could say more:
    its id, and its kind and area as the markers its module declares give them."""
    example, page = _doc_example_id(nodeid), doc_page_of(nodeid)
    if example is not None and page is not None:
        return ItemInfo(example, nodeid, "doc", page, (), ())
    relative = suite_test_id(nodeid)
    marks = declared_marks(relative)
    area = _first_arg(marks, "area", folder_area(relative.partition("::")[0]))
    return ItemInfo(relative, nodeid, _first_arg(marks, "kind", UNMARKED_KIND), area, (), ())
