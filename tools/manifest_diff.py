"""Differences between two spec manifests, by page and example id (a new release as a diff)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: Example fields whose change means the example changed.
_EXAMPLE_FIELDS = ("sha256", "classification", "reason", "object", "apis")
#: Fields that only say where the example is; they move with any edit above it.
_POSITION_FIELDS = ("line", "source")
_PAGE_FIELDS = ("kind", "source", "path", "status", "reason")


def diff_manifests(old: dict, new: dict) -> list[str]:
    """Readable lines naming every page and example added, removed or changed from old to new."""
    lines = []
    for key in ("flax_version", "jax_version", "sdist"):
        if old.get(key) != new.get(key):
            lines.append(f"~ {key}: {old.get(key)!r} -> {new.get(key)!r}")
    old_pages = {page["id"]: page for page in old.get("pages", [])}
    new_pages = {page["id"]: page for page in new.get("pages", [])}
    for page_id in sorted(old_pages.keys() - new_pages.keys()):
        lines.append(f"- page {page_id} ({len(old_pages[page_id]['examples'])} examples)")
    for page_id in sorted(new_pages.keys() - old_pages.keys()):
        lines.append(f"+ page {page_id} ({len(new_pages[page_id]['examples'])} examples)")
    for page_id in sorted(old_pages.keys() & new_pages.keys()):
        lines += _page_diff(page_id, old_pages[page_id], new_pages[page_id])
    return lines


def _page_diff(page_id: str, old: dict, new: dict) -> list[str]:
    lines = [
        f"~ page {page_id}: {field} {old.get(field)!r} -> {new.get(field)!r}"
        for field in _PAGE_FIELDS
        if old.get(field) != new.get(field)
    ]
    old_examples = {example["id"]: example for example in old["examples"]}
    new_examples = {example["id"]: example for example in new["examples"]}
    for example_id in _ordered(old_examples.keys() - new_examples.keys(), old["examples"]):
        lines.append(f"- example {example_id}")
    for example_id in _ordered(new_examples.keys() - old_examples.keys(), new["examples"]):
        lines.append(f"+ example {example_id}")
    moved = 0
    for example_id in _ordered(old_examples.keys() & new_examples.keys(), new["examples"]):
        before, after = old_examples[example_id], new_examples[example_id]
        changed = [field for field in _EXAMPLE_FIELDS if before.get(field) != after.get(field)]
        if changed:
            details = ", ".join(
                "source or expected output changed"
                if field == "sha256"
                else f"{field} {before.get(field)!r} -> {after.get(field)!r}"
                for field in changed
            )
            lines.append(f"~ example {example_id}: {details}")
        elif any(before.get(field) != after.get(field) for field in _POSITION_FIELDS):
            moved += 1
    if moved:
        lines.append(f"~ page {page_id}: {moved} examples moved (line/source only)")
    if not lines and old.get("sha256") != new.get("sha256"):
        lines.append(f"~ page {page_id}: text changed outside its examples")
    return lines


def _ordered(ids: set[str], examples: list[dict]) -> list[str]:
    """``ids`` in the order the page lists them."""
    return [example["id"] for example in examples if example["id"] in ids]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old", type=Path, help="manifest.json to compare from")
    parser.add_argument("new", type=Path, help="manifest.json to compare to")
    args = parser.parse_args(argv)
    lines = diff_manifests(json.loads(args.old.read_text()), json.loads(args.new.read_text()))
    print("\n".join(lines) if lines else "manifests are identical")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
