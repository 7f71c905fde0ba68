"""Plain-Python examples of docstrings: reST literal blocks and python code-block directives.

A paragraph ending in ``::`` followed by an indented block, or a ``.. code-block:: python``
(``code``, ``sourcecode``, ``testcode``) directive, is a code example when its text parses as
Python and holds no ``>>>`` prompt. API pages render such a block as a fenced ``python``
block in place of the indented one; other literal blocks (shell, output listings) stay as
they are.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass

_DIRECTIVE_RE = re.compile(r"^\s*\.\.\s")
_CODE_DIRECTIVE_RE = re.compile(
    r"^\s*\.\.\s+(?:(?:code-block|code|sourcecode)::\s*(?:python3?|py)|testcode::)\s*$")
_OPTION_RE = re.compile(r"^\s*:[\w-]+:")
#: Names the doctest global set-up of flax's docs gives every example (docs_nnx/conf.py).
SETUP_NAMES = frozenset({"jax", "jnp", "nnx"})
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class CodeBlock:
    """A Python block of a docstring: lines ``start:end`` of it hold ``code`` indented."""

    start: int  # index of the block's first line in the docstring's lines
    end: int  # index after its last non-blank line
    indent: str  # indentation of the paragraph or directive that introduces it
    code: str  # the block dedented, ending in a newline


def code_blocks(doc: str) -> list[CodeBlock]:
    """The literal blocks and python code-block directives of ``doc`` that are Python examples."""
    lines = doc.split("\n")
    blocks: list[CodeBlock] = []
    covered = 0  # end of the last literal block, Python or not: its lines are no markup
    for index, line in enumerate(lines):
        if index < covered:
            continue
        if _CODE_DIRECTIVE_RE.match(line):
            body = index + 1
            while body < len(lines) and _OPTION_RE.match(lines[body]):
                body += 1
        elif line.rstrip().endswith("::") and not _DIRECTIVE_RE.match(line):
            body = index + 1
        else:
            continue
        block = _indented_block(lines, body, _indentation(line))
        if block is None:
            continue
        covered = block.end
        if _is_python(block.code):
            blocks.append(block)
    return blocks


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _indented_block(lines: list[str], body: int, indent: str) -> CodeBlock | None:
    """The block after a blank line from ``body`` on, indented deeper than ``indent``."""
    if body >= len(lines) or lines[body].strip():
        return None  # reST needs a blank line before a literal block
    start = body
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = start
    for index in range(start, len(lines)):
        if lines[index].strip():
            if len(_indentation(lines[index])) <= len(indent):
                break
            end = index + 1
    if end == start:
        return None
    return CodeBlock(start, end, indent, textwrap.dedent("\n".join(lines[start:end])) + "\n")


def _is_python(code: str) -> bool:
    if ">>>" in code:
        return False
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def render(block: CodeBlock) -> list[str]:
    """The fenced ``python`` block that replaces the docstring lines ``block.start:block.end``."""
    longest = max((len(run) for run in re.findall(r"`+", block.code)), default=0)
    fence = block.indent + "`" * max(3, longest + 1)
    body = [f"{block.indent}{line}" if line else "" for line in block.code.split("\n")[:-1]]
    return [f"{fence}python", *body, fence]


def module_names(source: str) -> set[str]:
    """Names ``source`` binds at module level (what a later example of the page can use)."""
    tree = _parse(source)
    if tree is None:
        return set()
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        names |= _bound_here(node)
        pending.extend(ast.iter_child_nodes(node))
    return names


def undefined_names(source: str, defined: set[str]) -> list[str]:
    """Sorted names ``source`` reads that neither it, ``defined``, builtins nor the set-up bind."""
    tree = _parse(source)
    if tree is None:
        return []
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        bound |= _bound_here(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            read.add(node.id)
    return sorted(read - bound - defined - _BUILTINS - SETUP_NAMES)


def _bound_here(node: ast.AST) -> set[str]:
    """Names one node binds itself: assignment targets, imports, ``except ... as``."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return {node.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {alias.asname or alias.name.partition(".")[0] for alias in node.names}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    return set()


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None
