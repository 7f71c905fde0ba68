"""What a finished suite run leaves besides its table: the reproduction scripts of its
failures, the HTML page of its report, and (``--update-expectations``) the
implementation's expectations file rewritten from its outcomes."""

from __future__ import annotations

from typing import Any

import pytest

from . import expectations, html_report, repro
from .suite import Suite

SHOWN_REPROS = 50
"""How many reproduction scripts the console names one by one."""


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nnx-conformance")
    group.addoption(
        "--update-expectations",
        action="store_true",
        help="rewrite the expectations file from the run's outcomes (a new failure gets a TODO "
        "reason to replace); with --conformance-report, reproductions and an HTML page "
        "are written beside the report",
    )


def _reproductions(suite: Suite, built: dict[str, Any], terminal: Any) -> None:
    """Write a script per failed test beside the JSON report, record each as the test's ``repro``."""
    if suite.settings.report is None:
        return
    if suite.impl.module is None:
        terminal.write_line(f"no reproductions: {suite.impl.import_failure_line}")
        return
    base = suite.settings.report.parent
    profile = terminal.config.getoption("hypothesis_profile", None)
    writer = repro.ScriptWriter(
        suite.impl.name,
        suite.docs.manifest,
        suite.settings.spec_dir,
        suite.settings.device,
        ("--hypothesis-profile", profile) if profile else (),
    )
    longreprs = {report.nodeid: report.longreprtext for report in terminal.stats.get("failed", [])}
    written = repro.write_scripts(built, base / repro.FOLDER, writer, longreprs)
    if not written:
        return
    terminal.section(f"reproductions ({len(written)}): python <script>", red=True)
    for test in [t for t in built["tests"] if t.get("repro")][:SHOWN_REPROS]:
        terminal.write_line(f"{test['id']}: {base / test['repro']}")
    if len(written) > SHOWN_REPROS:
        terminal.write_line(f"... and {len(written) - SHOWN_REPROS} more in {base / repro.FOLDER}")


def _update_expectations(suite: Suite, built: dict[str, Any], terminal: Any) -> None:
    path = suite.settings.expectations
    if path is None:
        terminal.write_line(
            f"--update-expectations: {suite.impl.name} has no expectations file; "
            "name one (it may be empty) with --expectations FILE",
            red=True,
        )
        return
    update = expectations.update(path, built["tests"])
    terminal.section(f"expectations updated: {path}", yellow=update.changed)
    for test_id in update.added:
        terminal.write_line(f"added (write its reason in place of {expectations.PLACEHOLDER}): {test_id}")
    for entry in update.removed:
        terminal.write_line(f"removed, its tests pass: {entry.pattern}")
    for entry in update.narrowed:
        terminal.write_line(f"narrowed to the tests that still fail: {entry.pattern}")
    for entry in update.unmatched:
        terminal.write_line(f"kept, matched no test of this run: {entry.pattern} ({entry.source})")
    if not (update.changed or update.unmatched):
        terminal.write_line("no change")


def finish(suite: Suite, built: dict[str, Any], terminal: Any) -> None:
    """Write the run's reproductions and HTML page, update its expectations when asked;
    called before the JSON report is written, so that it names the reproductions."""
    _reproductions(suite, built, terminal)
    if suite.settings.report is not None:
        page = html_report.write(built, suite.settings.report.with_suffix(".html"))
        terminal.write_line(f"html report: {page}")
    if terminal.config.getoption("update_expectations", False):
        _update_expectations(suite, built, terminal)
