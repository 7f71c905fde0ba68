"""The nnx names an example uses: ``nnx.X`` / ``flax.nnx.X`` attributes and ``from flax.nnx import X``."""

from __future__ import annotations

import ast
import re

_FALLBACK_RE = re.compile(r"\b(?:flax\.)?nnx\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")


def nnx_names(source: str, submodules: frozenset[str]) -> list[str]:
    """Sorted nnx names used by ``source``; ``sub.Y`` for attributes of an nnx submodule.

    ``submodules`` are the names in ``flax.nnx`` that are modules (``graphlib``, ``initializers``).
    Parses with ``ast``; falls back to a regex for sources that are not plain Python.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return sorted({_qualified(m.group(1), m.group(2), submodules) for m in _FALLBACK_RE.finditer(source)})
    aliases = {"nnx"} | _nnx_aliases(tree)
    names: set[str] = set()
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "flax.nnx":
                names.update(alias.name for alias in node.names if alias.name != "*")
            elif node.module.startswith("flax.nnx."):
                sub = node.module.split(".")[2]
                names.update(f"{sub}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            chain = _attribute_chain(node)
            if chain is None:
                continue
            if chain[0] in aliases and len(chain) >= 2:
                rest = chain[1:]
            elif chain[:2] == ["flax", "nnx"] and len(chain) >= 3:
                rest = chain[2:]
            else:
                continue
            names.add(_qualified(rest[0], rest[1] if len(rest) > 1 else None, submodules))
    return sorted(names)


def _qualified(name: str, attribute: str | None, submodules: frozenset[str]) -> str:
    return f"{name}.{attribute}" if attribute and name in submodules else name


def _nnx_aliases(tree: ast.AST) -> set[str]:
    """Local names bound to the ``flax.nnx`` module (``import flax.nnx as nn``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == "flax.nnx" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "flax" and not node.level:
            aliases.update(a.asname or a.name for a in node.names if a.name == "nnx")
    return aliases


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None when the chain does not start at a name."""
    parts = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    parts.append(current.id)
    return parts[::-1]
