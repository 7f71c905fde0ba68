"""A pytest plugin that keeps the suite's tests most likely to see a bug in one module or line.

    pytest --pyargs nnx_conformance -p tools.mutation_focus --mutation-focus nnx_reference.nn.linear
    pytest --pyargs nnx_conformance -p tools.mutation_focus --mutation-tests ids.txt

With ``--mutation-focus``, a test is kept when its area is one of the module's areas
(its report area: the doc page of that area and the hand-written tests filed under it)
or when it exercises a public name the module defines. With ``--mutation-tests``, a
test is kept when its node id is a line of the file (the tests that ran a mutated line:
see ``mutation_lines``). Everything else is deselected.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import pytest

from nnx_conformance.items import describe, in_suite

AREAS: dict[str, tuple[str, ...]] = {
    "graphlib": ("graph",),
    "traversals": ("graph",),
    "variablelib": ("variables", "guide:hijax"),
    "statelib": ("state",),
    "pytreelib": ("module", "object", "guide:pytree"),
    "reprlib": ("module", "object", "variables", "display"),
    "module": ("module", "warnings"),
    "rnglib": ("rnglib", "guide:randomness"),
    "filterlib": ("filterlib", "guide:filters_guide"),
    "extract": ("transforms",),
    "transforms": ("transforms", "guide:transforms"),
    "training/train_state": ("training/optimizer",),
    "summary": ("summary", "display"),
    "summary_table": ("summary", "display"),
    "visualization": ("visualization", "display"),
    "helpers": ("helpers", "nn"),
    "spmd": ("spmd", "variables"),
}
"""Report areas of the modules whose path does not name their area (by path, without ``.py``)."""


def areas_of(module: str) -> tuple[str, ...]:
    """The report areas that spec the reference module ``module`` (dotted name)."""
    path = "/".join(module.split(".")[1:])
    top = path.partition("/")[0]
    return AREAS.get(path) or AREAS.get(top) or (path,)


def names_defined_in(module: str) -> frozenset[str]:
    """The public names whose classes and functions ``module`` defines."""
    namespace = vars(importlib.import_module(module))
    return frozenset(
        name
        for name, value in namespace.items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--mutation-focus", metavar="MODULE", help="keep only the suite's tests of this reference module (dotted name)"
    )
    parser.addoption(
        "--mutation-tests", metavar="FILE", type=Path, help="keep only the tests whose node ids are the lines of FILE"
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    module, listed = config.getoption("--mutation-focus"), config.getoption("--mutation-tests")
    if listed:
        ids = frozenset(listed.read_text().splitlines())
        kept, dropped = _split(items, lambda item: item.nodeid in ids)
    elif module:
        areas, names = set(areas_of(module)), names_defined_in(module)

        def focused(item: pytest.Item) -> bool:
            info = describe(item) if in_suite(item) else None
            return info is not None and (info.area in areas or not names.isdisjoint(info.apis))

        kept, dropped = _split(items, focused)
    else:
        return
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _split(
    items: list[pytest.Item], keep: Callable[[pytest.Item], bool]
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """The items ``keep`` accepts, and the others."""
    kept, dropped = [], []
    for item in items:
        (kept if keep(item) else dropped).append(item)
    return kept, dropped
