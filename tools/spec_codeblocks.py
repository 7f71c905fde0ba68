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

from nnx_conformance.blocking import defined_names, free_names
from nnx_conformance.docpages import GLOBAL_SETUP

_DIRECTIVE_RE = re.compile(r"^\s*\.\.\s")
_CODE_DIRECTIVE_RE = re.compile(r"^\s*\.\.\s+(?:(?:code-block|code|sourcecode)::\s*(?:python3?|py)|testcode::)\s*$")
_OPTION_RE = re.compile(r"^\s*:[\w-]+:")
#: Names the doctest global set-up of flax's docs gives every example (docs_nnx/conf.py).
SETUP_NAMES = frozenset(defined_names(GLOBAL_SETUP))
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
    return fenced("python", block.code, block.indent)


def fenced(info: str, body: str, indent: str = "") -> list[str]:
    """``body`` (its lines each ending in a newline) as a Markdown fenced block, indented by
    ``indent`` but for blank lines, its fence one backtick longer than the longest backtick run
    inside (at least 3)."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = indent + "`" * max(3, longest + 1)
    lines = [f"{indent}{line}" if line else "" for line in body.split("\n")[:-1]]
    return [f"{fence}{info}", *lines, fence]


def undefined_names(source: str, defined: set[str]) -> list[str]:
    """Sorted names ``source`` reads before binding them (``nnx_conformance.blocking``) that
    neither ``defined``, builtins nor the set-up bind."""
    return sorted(free_names(source) - defined - _BUILTINS - SETUP_NAMES)
