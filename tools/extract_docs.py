"""Generates the spec pages and manifest from the pinned flax sdist (docs_extracted/README.md).

    python -m tools.extract_docs [--flax VERSION] [--sdist PATH] [--out DIR] [--check]

Reads ``docs_nnx/`` of the sdist and the source its API pages document, without importing
flax; objects flax re-exports from jax are imported from jax for their docstrings.
The pages written are then parsed as the suite's plugin parses them, and must hold the
examples the manifest lists.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import shutil
import sys
from pathlib import Path

from nnx_conformance import docpages
from nnx_conformance.manifest import Manifest, example_digest

from .manifest_diff import diff_manifests
from .notebook_pages import EXCLUDED_GUIDES, GUIDES, notebook_cells
from .rst_pages import resolve_api_page
from .spec_objects import SourceTree
from .spec_pages import Page, api_page, guide_page
from .spec_sdist import Sdist, fetch_sdist, load_sdist

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VERSION = "0.12.12"
API_DIR = "docs_nnx/api_reference/flax.nnx/"
#: API pages listed in the manifest but not run, with the reason.
EXCLUDED_API_PAGES = {"bridge": "nnx.bridge is Linen interop, out of scope"}


def build_pages(sdist: Sdist) -> tuple[list[Page], list[str]]:
    """Every spec page of the sdist, sorted by id, and the warnings met resolving them."""
    tree = SourceTree(sdist)
    submodules = tree.submodule_names("flax.nnx")
    pages, warnings = [], []
    for path in sorted(p for p in sdist.files if p.startswith(API_DIR) and p.endswith(".rst")):
        page_id = path[len(API_DIR) :].removesuffix(".rst")
        resolved = resolve_api_page(sdist.read(path), tree)
        warnings += [f"{path}: {warning}" for warning in resolved.warnings]
        pages.append(api_page(page_id, path, resolved.sections, submodules, EXCLUDED_API_PAGES.get(page_id)))
    for stem, path in sorted(GUIDES.items()):
        if not sdist.has(path):  # a release without this guide: the manifest diff shows it
            warnings.append(f"{path}: not in {sdist.filename}, page guide:{stem} left out")
            continue
        cells = notebook_cells(stem, sdist.read(path))
        pages.append(guide_page(stem, path, cells, submodules, EXCLUDED_GUIDES.get(stem)))
    return pages, warnings


def manifest(version: str, sdist: Sdist, pages: list[Page]) -> dict:
    """The manifest pinning ``pages`` (see docs_extracted/README.md)."""
    return {
        "flax_version": version,
        "jax_version": importlib.metadata.version("jax"),
        "sdist": {"filename": sdist.filename, "sha256": sdist.sha256},
        "pages": [page.entry() for page in pages],
    }


def manifest_text(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_output(out: Path, pages: list[Page], data: dict) -> None:
    """Replaces ``out/pages`` with the generated pages and writes ``out/manifest.json``."""
    shutil.rmtree(out / "pages", ignore_errors=True)
    for page in pages:
        target = out / page.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(page.text.encode("utf-8"))
    (out / "manifest.json").write_bytes(manifest_text(data).encode("utf-8"))


def unparsed_examples(out: Path) -> list[str]:
    """Where the pages written to ``out`` do not hold the examples the manifest lists, as the
    suite's plugin parses them (``nnx_conformance.docsuite``): their number, each one's hash."""
    problems = []
    for page in Manifest.read(out).pages:
        _, examples = docpages.parse_page(page, "flax.nnx")
        if len(examples) != len(page.examples):
            problems.append(
                f"{page.path}: the suite finds {len(examples)} examples, the manifest lists {len(page.examples)}"
            )
            continue
        problems += [
            f"{page.path}:{example.line}: the suite's example does not match {entry.id} of the manifest"
            for entry, example in zip(page.examples, examples)
            if example_digest(*docpages.source_and_output(example)) != entry.sha256
        ]
    return problems


def counts(pages: list[Page]) -> tuple[int, int]:
    """(examples that run, examples excluded) over ``pages``."""
    run = sum(e.reason is None for page in pages for e in page.examples)
    return run, sum(len(page.examples) for page in pages) - run


def summary(pages: list[Page]) -> str:
    rows = [f"{'page':34} {'status':9} {'run':>5} {'excluded':>8}"]
    for page in pages:
        run, excluded = counts([page])
        rows.append(f"{page.id:34} {'run' if page.reason is None else 'excluded':9} {run:5} {excluded:8}")
    run, excluded = counts(pages)
    rows.append(f"{len(pages)} pages, {run} run examples, {excluded} excluded examples")
    return "\n".join(rows)


def _version_of(sdist_path: Path, default: str) -> str:
    name = sdist_path.name
    return name[len("flax-") : -len(".tar.gz")] if name.startswith("flax-") and name.endswith(".tar.gz") else default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flax", default=DEFAULT_VERSION, help="flax release to extract (default %(default)s)")
    parser.add_argument("--sdist", type=Path, help="use this local sdist tarball instead of downloading")
    parser.add_argument("--out", type=Path, default=ROOT / "docs_extracted", help="output folder")
    parser.add_argument(
        "--check", action="store_true", help="regenerate in memory and fail on any difference from the manifest"
    )
    args = parser.parse_args(argv)

    sdist_path = args.sdist or fetch_sdist(args.flax, ROOT / ".cache" / "sdists")
    version = _version_of(sdist_path, args.flax)
    sdist = load_sdist(sdist_path)
    pages, warnings = build_pages(sdist)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    data = manifest(version, sdist, pages)
    run, _ = counts(pages)

    if args.check:
        committed_path = args.out / "manifest.json"
        if not committed_path.exists():
            print(f"no manifest at {committed_path}; run without --check first")
            return 1
        fresh = json.loads(manifest_text(data))
        committed = json.loads(committed_path.read_text())
        if committed == fresh:
            print(f"spec matches manifest ({len(pages)} pages, {run} run examples)")
            return 0
        lines = diff_manifests(committed, fresh)
        print(f"spec differs from {committed_path}:")
        print("\n".join(lines or ["manifest content differs"]))
        return 1

    write_output(args.out, pages, data)
    print(summary(pages))
    problems = unparsed_examples(args.out)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
