"""The reference's modules import each other in one direction only.

Every import statement of every module of ``nnx_reference`` counts, including
imports inside functions: a function-level import of a module that imports the
caller back is still a cycle, only a hidden one.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = "nnx_reference"
ROOT = Path(__file__).resolve().parents[1] / "src" / PACKAGE


class Module(NamedTuple):
    """A module of the package: its dotted name, its source file, and whether it is a package."""

    name: str
    path: Path
    is_package: bool


def modules() -> dict[str, Module]:
    """Every module of the package, by dotted name."""
    found: dict[str, Module] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = (PACKAGE, *path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Module(name, path, is_package)
    return found


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    """The absolute dotted name a ``from ... import`` statement imports from."""
    if not node.level:
        return node.module or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    anchor = package.rsplit(".", node.level - 1)[0]
    return f"{anchor}.{node.module}" if node.module else anchor


def imports(module: Module, known: dict[str, Module]) -> Iterator[str]:
    """The modules of the package that a module imports, from every import statement in it.

    ``from a import b`` imports the submodule ``a.b`` where there is one, and the
    module ``a`` otherwise. Importing a submodule is not counted as importing its
    parent packages: Python runs them first, but they are not what the importer uses.
    """
    for node in ast.walk(ast.parse(module.path.read_text(), str(module.path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:
                    yield submodule
                elif base in known:
                    yield base


def import_graph() -> dict[str, set[str]]:
    """For each module of the package, the other modules of the package it imports."""
    known = modules()
    return {name: set(imports(module, known)) - {name} for name, module in known.items()}


def test_the_package_has_modules_to_check():
    graph = import_graph()
    assert f"{PACKAGE}.graphlib" in graph and f"{PACKAGE}.transforms.compilation" in graph, (
        f"expected to find the reference's modules under {ROOT}, found {sorted(graph)}"
    )


def test_no_module_imports_itself_back_through_others():
    try:
        tuple(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as error:
        cycle = reversed(error.args[1])  # the sorter lists each module before the one that imports it
        pytest.fail(
            "expected the reference's imports to form no cycle, found one (a -> b: a imports b): " + " -> ".join(cycle)
        )
