"""The generated spec: ``docs_extracted/manifest.json`` and the pages it locks.

See ``docs_extracted/README.md`` for the format. Only what a suite run uses is read:
the examples' hashes lock the pages (a page's own hash and the examples' provenance
are for the tools that regenerate and compare specs).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
REGENERATE = "regenerate the spec: nox -s extract"


@dataclass(frozen=True)
class ExampleEntry:
    """One example of a page, as the manifest pins it."""

    id: str
    line: int
    sha256: str
    apis: tuple[str, ...]
    classification: str
    reason: str | None

    @property
    def excluded(self) -> bool:
        return self.classification != "run"


@dataclass(frozen=True)
class PageEntry:
    """One generated page: its id (the report area), kind, file and examples."""

    id: str
    kind: str
    path: Path
    status: str
    reason: str | None
    examples: tuple[ExampleEntry, ...]

    @property
    def excluded(self) -> bool:
        return self.status != "run"


@dataclass(frozen=True)
class Manifest:
    """The spec's pages, in manifest order."""

    pages: tuple[PageEntry, ...]

    @classmethod
    def read(cls, root: Path) -> Manifest:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        pages = tuple(
            PageEntry(
                id=page["id"],
                kind=page["kind"],
                path=root / page["path"],
                status=page.get("status", "run"),
                reason=page.get("reason"),
                examples=tuple(
                    ExampleEntry(
                        id=example["id"],
                        line=int(example.get("line", 0)),
                        sha256=example.get("sha256", ""),
                        apis=tuple(example.get("apis", ())),
                        classification=example.get("classification", "run"),
                        reason=example.get("reason"),
                    )
                    for example in page.get("examples", ())
                ),
            )
            for page in data["pages"]
        )
        return cls(pages)


def example_digest(source: str, output: str) -> str:
    """The manifest hash of an example: sha256 of its source followed by its expected output."""
    return hashlib.sha256((source + output).encode("utf-8")).hexdigest()
