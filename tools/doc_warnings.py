"""Record the deprecations flax.nnx emits on each doc example, or check the committed record.

    python -m tools.doc_warnings --spec-dir docs_extracted            # rewrite data/doc_warnings.json
    python -m tools.doc_warnings --spec-dir docs_extracted --check    # exit 1 if a new run differs

Run it where the pinned flax is installed (the ``impl-flax-*`` or ``impl-both`` venv). It
runs every doc example the suite runs, in page order in one process as the suite does,
against flax.nnx in graph mode, and keeps the warnings of the examples that run as
documented (see ``nnx_conformance.doc_warnings``).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

import pytest

from nnx_conformance.devices import JaxEnvironment
from nnx_conformance.doc_warnings import DATA, DocWarnings
from nnx_conformance.docsuite import DocSuite
from nnx_conformance.graph_modes import GraphMode
from nnx_conformance.impl import FLAX_NNX, Implementation
from nnx_conformance.manifest import Manifest
from nnx_conformance.patterns import PatternList

REPO = Path(__file__).resolve().parents[1]
_OUTCOMES = (pytest.fail.Exception, pytest.skip.Exception)


def record(spec_dir: Path) -> DocWarnings:
    """The warnings flax emits on each example of the spec that runs as documented."""
    JaxEnvironment().configure(None)
    impl = Implementation.load(FLAX_NNX)
    if impl.module is None:
        raise SystemExit(f"flax.nnx does not import here:\n{impl.error}")
    defects = PatternList.read(REPO / "conformance" / "spec_defects.txt")
    suite = DocSuite(Manifest.read(spec_dir), None, impl, defects, False, GraphMode.GRAPH)
    documented = []
    for case in suite.cases():
        if case.skip() is not None:
            continue
        try:
            case.run()
        except _OUTCOMES:
            continue
        documented.append(case.test_id)
    return DocWarnings({example: suite.warned[example] for example in documented})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec-dir", type=Path, default=REPO / "docs_extracted", help="the generated pages")
    parser.add_argument("--out", type=Path, default=DATA, help=f"where to write (default {DATA})")
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args()
    text = record(args.spec_dir).dumps()
    if not args.check:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
        return 0
    committed = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    if committed == text:
        print(f"{args.out} is what flax.nnx emits")
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(committed.splitlines(True), text.splitlines(True), str(args.out), "flax.nnx now")
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
