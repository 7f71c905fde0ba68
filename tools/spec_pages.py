"""Generated spec pages (Markdown that sybil parses) and their manifest entries."""

from __future__ import annotations

import doctest
import hashlib
from dataclasses import dataclass

from sybil.parsers.abstract import DocTestStringParser

from nnx_conformance.blocking import defined_names
from nnx_conformance.manifest import example_digest

from .example_apis import nnx_names
from .exclusions import excluded_reason
from .notebook_pages import Cell
from .spec_codeblocks import code_blocks, fenced, render, undefined_names
from .spec_objects import Documented

_SKIP_REASON = "marked `doctest: +SKIP` in the docstring"


@dataclass(frozen=True)
class Example:
    """One example of a page: a doctest statement or code block (API pages), a code cell (guides)."""

    id: str
    object: str | None
    source: str
    line: int
    sha256: str
    apis: list[str]
    reason: str | None  # None when the example runs
    form: str | None = None  # API pages: "doctest" | "code"; guides: None

    def entry(self) -> dict:
        entry = {
            "id": self.id,
            "object": self.object,
            "source": self.source,
            "line": self.line,
            "sha256": self.sha256,
            "apis": self.apis,
            "classification": "run" if self.reason is None else "excluded",
        }
        if self.reason is not None:
            entry["reason"] = self.reason
        if self.form is not None:
            entry["form"] = self.form
        return entry


@dataclass(frozen=True)
class Page:
    """A generated page: its Markdown text and the examples sybil will find in it, in order."""

    id: str
    kind: str  # "api" | "guide"
    source: str
    path: str  # relative to the output folder
    text: str
    reason: str | None  # None when the page runs
    examples: list[Example]

    def entry(self) -> dict:
        entry = {
            "id": self.id,
            "kind": self.kind,
            "source": self.source,
            "path": self.path,
            "sha256": hashlib.sha256(self.text.encode("utf-8")).hexdigest(),
            "status": "run" if self.reason is None else "excluded",
            "examples": [example.entry() for example in self.examples],
        }
        if self.reason is not None:
            entry["reason"] = self.reason
        return entry


@dataclass(frozen=True)
class DoctestExample:
    """A ``>>>`` example as sybil's doctest parser finds it in a page."""

    line: int  # 1-based line of its first ``>>>``
    source: str
    want: str
    skip: bool


def doctest_examples(text: str, name: str = "<page>") -> list[DoctestExample]:
    """The ``>>>`` examples of ``text``, as sybil's doctest parser finds them."""
    return [
        DoctestExample(
            region.parsed.lineno + 1,
            region.parsed.source,
            region.parsed.want,
            bool(region.parsed.options.get(doctest.SKIP)),
        )
        for region in DocTestStringParser()(text, name)
    ]


@dataclass(frozen=True)
class _Found:
    """An example found on an API page, before numbering."""

    line: int  # page line: the first ``>>>`` line, or the opening fence
    section: Documented
    index: int  # line index in the section's docstring
    source: str
    want: str
    form: str  # "doctest" | "code"
    skip: bool


def api_page(
    page_id: str, source: str, sections: list[Documented], submodules: frozenset[str], reason: str | None
) -> Page:
    """Renders an API page: ``# <page id>``, then ``## <object>`` and its docstring per section.

    A docstring's Python code blocks (``spec_codeblocks``) are rendered as fenced ``python``
    blocks; they and the ``>>>`` examples are the page's examples, numbered per object in
    page order.
    """
    lines = [f"# {page_id}", ""]
    origin: dict[int, tuple[Documented, int]] = {}  # page line -> (section, docstring line index)
    found: list[_Found] = []
    for section in sections:
        lines += [f"## {section.name}", ""]
        if not section.doc:
            continue
        doc_lines = section.doc.split("\n")
        position = 0
        for block in code_blocks(section.doc):
            _copy_lines(lines, origin, section, doc_lines, position, block.start)
            found.append(_Found(len(lines) + 1, section, block.start, block.code, "", "code", False))
            lines += render(block)
            position = block.end
        _copy_lines(lines, origin, section, doc_lines, position, len(doc_lines))
        lines.append("")
    text = "\n".join(lines).rstrip("\n") + "\n"
    for doctest_example in doctest_examples(text, page_id):
        section, index = origin[doctest_example.line]
        found.append(
            _Found(
                doctest_example.line,
                section,
                index,
                doctest_example.source,
                doctest_example.want,
                "doctest",
                doctest_example.skip,
            )
        )
    examples = []
    counts: dict[str, int] = {}
    defined: set[str] = set()
    for example in sorted(found, key=lambda f: f.line):
        section = example.section
        counts[section.name] = counts.get(section.name, 0) + 1
        location = section.source if section.line is None else f"{section.source}:{section.line + example.index}"
        missing = undefined_names(example.source, defined) if example.form == "code" else []
        defined |= defined_names(example.source)
        examples.append(
            Example(
                id=f"{page_id}/{section.name}:{counts[section.name]}",
                object=section.name,
                source=location,
                line=example.line,
                sha256=example_digest(example.source, example.want),
                apis=nnx_names(example.source, submodules),
                reason=reason
                or (_SKIP_REASON if example.skip else None)
                or excluded_reason(example.source)
                or (_fragment_reason(missing) if missing else None),
                form=example.form,
            )
        )
    return Page(page_id, "api", source, f"pages/api/{page_id}.md", text, reason, examples)


def _copy_lines(
    lines: list[str],
    origin: dict[int, tuple[Documented, int]],
    section: Documented,
    doc_lines: list[str],
    start: int,
    end: int,
) -> None:
    """Appends ``doc_lines[start:end]`` to the page, remembering where each came from."""
    for index in range(start, end):
        lines.append(doc_lines[index])
        origin[len(lines)] = (section, index)


def _fragment_reason(missing: list[str]) -> str:
    return f"fragment: uses {', '.join(missing)}, which the page never defines"


def guide_page(stem: str, source: str, cells: list[Cell], submodules: frozenset[str], reason: str | None) -> Page:
    """Renders a guide: per code cell, a marker, a python block, and its text output block."""
    page_id = f"guide:{stem}"
    lines = [f"# {page_id}", ""]
    examples = []
    for cell in cells:
        body = _block_body(cell.source)
        lines += [f"<!-- cell: {cell.index} -->"]
        fence_line = len(lines) + 1
        lines += fenced("python", body)
        want = ""
        if cell.output is not None:
            want = cell.output
            lines += ["<!-- output -->", *fenced("text", want)]
        lines.append("")
        examples.append(
            Example(
                id=f"{page_id}/cell:{cell.index}",
                object=None,
                source=f"{source}:{cell.line}",
                line=fence_line,
                sha256=example_digest(body, want),
                apis=nnx_names(cell.source, submodules),
                reason=reason or cell.reason,
            )
        )
    text = "\n".join(lines).rstrip("\n") + "\n"
    return Page(page_id, "guide", source, f"pages/guides/{stem}.md", text, reason, examples)


def _block_body(source: str) -> str:
    """A code block's text between its fences: the source, ending in a newline unless empty."""
    return source if not source or source.endswith("\n") else source + "\n"
