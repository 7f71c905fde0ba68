"""Suite runs in a subprocess of their own, for implementations that crash or hang, and
the report such a run leaves."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import nnx_conformance

BROKEN = Path(__file__).parent / "fixtures" / "broken"
"""Deliberately broken implementations, each nnx_reference with one fault."""
REPO_SPEC = Path(os.environ.get("NNX_SPEC_DIR") or Path(__file__).parents[2] / "docs_extracted")
"""The generated spec of the repository (its pages come from ``nox -s extract``)."""
RUN_LIMIT = 240
"""Seconds a whole harness run may take before the test calls it hung."""


@dataclass
class SuiteRun:
    """A finished subprocess run: pytest's result and the JSON report it wrote."""

    result: pytest.RunResult
    report: dict[str, Any]

    def test(self, test_id: str) -> dict[str, Any]:
        """The report's entry for a test id."""
        found = [t for t in self.report["tests"] if t["id"] == test_id]
        assert found, f"the report lists {test_id}"
        return found[0]


def importable(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> None:
    """Make the suite under test and ``folders`` importable in subprocesses (xdist workers too)."""
    paths = [str(Path(nnx_conformance.__file__).parents[1]), *map(str, folders)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]))


def run_suite(
    pytester: pytest.Pytester,
    impl: str,
    spec: Path,
    *args: str,
    module: str = "nnx_conformance.spec.test_docs",
    limit: float = RUN_LIMIT,
) -> SuiteRun:
    """Run the suite's ``module`` in a subprocess against ``impl``, for at most ``limit`` seconds;
    the result and the report."""
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--pyargs",
        module,
        "--impl",
        impl,
        "--spec-dir",
        str(spec),
        "--conformance-report",
        str(report),
        "-p",
        "no:cacheprovider",
        "-rA",
        *args,
        timeout=limit,
    )
    return SuiteRun(result, json.loads(report.read_text()))


def needs_repo_spec() -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not (REPO_SPEC / "pages").is_dir(), reason=f"the spec pages are not generated in {REPO_SPEC} (nox -s extract)"
    )
