"""Tiny fake specs (docs_extracted folders) and fake implementations for the harness tests."""

from __future__ import annotations

import doctest
import hashlib
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from nnx_conformance.manifest import example_digest


@dataclass
class ApiPage:
    """An API page: (object name, docstring with >>> examples and ```python blocks) sections."""

    id: str
    sections: list[tuple[str, str]]
    status: str = "run"
    reason: str | None = None


@dataclass
class GuidePage:
    """A guide page: (source, text output or None) cells."""

    id: str
    cells: list[tuple[str, str | None]]


_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _api(page: ApiPage) -> tuple[str, list[dict]]:
    lines = [f"# {page.id}", ""]
    examples = []
    for name, doc in page.sections:
        lines += [f"## {name}", ""]
        start = len(lines)
        body = textwrap.dedent(doc).strip("\n")
        lines += body.splitlines() + [""]
        found = [(e.lineno, e.source, e.want, "doctest") for e in doctest.DocTestParser().get_examples(body)]
        found += [(body.count("\n", 0, m.start()), m.group(1), "", "code") for m in _PYTHON_BLOCK.finditer(body)]
        for counter, (lineno, source, want, form) in enumerate(sorted(found), 1):
            examples.append(
                {
                    "id": f"{page.id}/{name}:{counter}",
                    "object": name,
                    "source": "fake.py:1",
                    "line": start + lineno + 1,
                    "sha256": example_digest(source, want),
                    "apis": [],
                    "classification": "run",
                    "form": form,
                }
            )
    return "\n".join(lines) + "\n", examples


def _guide(page: GuidePage) -> tuple[str, list[dict]]:
    lines = [f"# {page.id}", ""]
    examples = []
    for number, (source, output) in enumerate(page.cells, 1):
        source = textwrap.dedent(source).strip("\n") + "\n"
        if output is not None:
            output = textwrap.dedent(output).strip("\n")
            output = output + "\n" if output else ""
        lines.append(f"<!-- cell: {number} -->")
        examples.append(
            {
                "id": f"{page.id}/cell:{number}",
                "object": None,
                "source": "fake.ipynb",
                "line": len(lines) + 1,
                "sha256": example_digest(source, output or ""),
                "apis": [],
                "classification": "run",
            }
        )
        lines += ["```python", *source.splitlines(), "```"]
        if output is not None:
            lines += ["<!-- output -->", "```text"] + output.splitlines() + ["```"]
        lines.append("")
    return "\n".join(lines) + "\n", examples


def write_spec(root: Path, *pages: ApiPage | GuidePage, excluded: dict[str, str] | None = None) -> Path:
    """Write ``root/docs_extracted`` with the pages and their manifest; return the folder.

    ``excluded`` maps example ids to the reason they are excluded.
    """
    spec = root / "docs_extracted"
    entries = []
    for page in pages:
        kind = "api" if isinstance(page, ApiPage) else "guide"
        text, examples = _api(page) if kind == "api" else _guide(page)
        for example in examples:
            if excluded and example["id"] in excluded:
                example.update(classification="excluded", reason=excluded[example["id"]])
        name = page.id.removeprefix("guide:")
        path = f"pages/{'api' if kind == 'api' else 'guides'}/{name}.md"
        (spec / path).parent.mkdir(parents=True, exist_ok=True)
        (spec / path).write_text(text, encoding="utf-8")
        entry = {
            "id": page.id,
            "kind": kind,
            "source": "fake",
            "path": path,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "status": getattr(page, "status", "run"),
            "examples": examples,
        }
        if getattr(page, "reason", None):
            entry["reason"] = page.reason
        entries.append(entry)
    (spec / "manifest.json").write_text(json.dumps({"flax_version": "0.12.12", "pages": entries}, indent=1))
    return spec


FAKE_IMPL = {
    "fakennx/__init__.py": '''
        """A fake NNX implementation with a few names."""
        from . import graphlib, nn
        from .graphlib import split, Thing
        __version__ = "0.0.1"

        def display(*objects):
            for obj in objects:
                print("DISPLAY", obj)
    ''',
    "fakennx/graphlib.py": """
        class Thing:
            def __repr__(self):
                return "Thing()"

        def split(x):
            return ("graphdef", x)
    """,
    "fakennx/nn/__init__.py": "from . import linear\n",
    "fakennx/nn/linear.py": "class Linear:\n    pass\n",
}


def write_fake_impl(root: Path, files: dict[str, str] = FAKE_IMPL) -> None:
    """Write the fake implementation package(s) under ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
