"""The conformance report: outcomes by area, as JSON, Markdown and a terminal table.

:class:`Outcomes` turns pytest's reports into one outcome per test; the functions
below render a report dictionary (``build``) so that other tools can reuse them
on a stored JSON report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .coverage_summary import markdown_lines as coverage_markdown_lines
from .items import ItemInfo, describe_nodeid, in_suite_nodeid

COUNTS = ("passed", "failed", "xfailed", "xpassed", "skipped", "spec_defects", "not_run")
"""A test's possible outcomes, each counted under its own name; ``spec_defects`` is a doc
example skipped as a spec defect (``Suite.adopt`` marks it so); ``not_run`` is a test the
run did not start: after a run-level error, without the yardstick a differential test
needs, or when the run stopped before reaching it. Each ``not_run`` test says why."""

INFO_ATTRIBUTE = "nnx_conformance"
"""The attribute of a suite test's phase reports that carries its :class:`ItemInfo` (as a
dict, so that it travels from xdist workers to the controller)."""


@dataclass(frozen=True)
class RunError:
    """Why a run as a whole could not test the implementation: ``kind`` is ``implementation``
    (it does not import) or ``harness`` (the spec or the suite is broken)."""

    kind: str
    message: str


def outcome_of(report: pytest.TestReport) -> str | None:
    """The test outcome a phase's report decides, or None when the phase decides nothing."""
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            return "xfailed" if hasattr(report, "wasxfail") else "skipped"
        if report.passed:
            return "xpassed" if hasattr(report, "wasxfail") else "passed"
        return "xpassed" if str(report.longrepr).startswith("[XPASS(strict)]") else "failed"
    if report.when not in ("setup", "call") and report.failed:  # teardown, or a crashed worker's "???"
        return "failed"
    return None


def _message(report: pytest.TestReport) -> str:
    """A short account of a non-passing outcome: the skip reason or the failure message."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):
        return longrepr[2].removeprefix("Skipped: ")
    if report.passed:
        return getattr(report, "wasxfail", "")
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr or "")
    return text.removeprefix("Failed: ")[:2000]


@dataclass
class ItemResult:
    info: ItemInfo
    spec_defect: bool = False  # skipped as a spec defect: its skip counts as ``spec_defects``
    outcome: str | None = None  # None until a phase decides it (never, if the run stops early)
    duration: float = 0.0
    message: str = ""
    crashed: bool = False  # its process died: later reports of it (a re-run) do not count


@dataclass(eq=False)
class Outcomes:
    """One outcome per suite test, from pytest's phase reports (in xdist's controller, the
    workers' reports): each carries its test's info (:data:`INFO_ATTRIBUTE`)."""

    results: dict[str, ItemResult] = field(default_factory=dict)
    progress: Callable[[], None] | None = None  # called after each change

    def not_run(self, info: ItemInfo, reason: str) -> None:
        """Record a test that the run does not start."""
        self.results[info.nodeid] = ItemResult(info, outcome="not_run", message=reason)

    def _result(self, report: pytest.TestReport) -> ItemResult | None:
        result = self.results.get(report.nodeid)
        if result is None:
            data = getattr(report, INFO_ATTRIBUTE, None)
            if data is not None:
                result = ItemResult(ItemInfo.from_dict(data["info"]), spec_defect=data["spec_defect"])
            elif report.when not in ("setup", "call", "teardown") and in_suite_nodeid(report.nodeid):
                result = ItemResult(describe_nodeid(report.nodeid))  # crashed before its setup reported
            else:
                return None
            self.results[report.nodeid] = result
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take a phase's report into account (this object is registered as a plugin)."""
        result = self._result(report)
        if result is None or result.crashed:
            return
        result.duration += report.duration
        outcome = outcome_of(report)
        if outcome is None or (report.when == "teardown" and result.outcome == "failed"):
            return
        if outcome == "skipped" and result.spec_defect:
            outcome = "spec_defects"
        elif outcome == "skipped" and getattr(report, INFO_ATTRIBUTE, {}).get("not_run"):
            outcome = "not_run"
        result.outcome = outcome
        result.message = "" if outcome == "passed" else _message(report)
        result.crashed = report.when not in ("setup", "call", "teardown")
        if self.progress is not None:
            self.progress()

    def finished(self) -> int:
        """How many tests have an outcome."""
        return sum(result.outcome is not None for result in list(self.results.values()))

    def not_reached(self, infos: list[ItemInfo], reason: str) -> int:
        """Record as not run, for ``reason``, the tests of ``infos`` that have no outcome; how many."""
        missing = [info for info in infos if self.results.get(info.nodeid, ItemResult(info)).outcome is None]
        for info in missing:
            self.not_run(info, reason)
        return len(missing)


def _count(results: list[ItemResult]) -> dict[str, int]:
    counts = dict.fromkeys(COUNTS, 0)
    for result in results:
        assert result.outcome is not None
        counts[result.outcome] += 1
    return counts


def build(
    outcomes: Outcomes,
    impl: str,
    versions: dict[str, str | None],
    device: str,
    graph_mode: str,
    *,
    complete: bool,
    collected: int | None,
    error: RunError | None = None,
    coverage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report dictionary that is written as JSON.

    ``complete`` is false for a report written while the run goes, or for a run that
    stopped before every collected test (``collected``, when known) had an outcome.
    ``coverage`` is the API coverage section (see ``coverage_summary``), when recorded.
    """
    results = [result for result in list(outcomes.results.values()) if result.outcome is not None]
    areas: dict[str, list[ItemResult]] = {}
    for result in results:
        areas.setdefault(result.info.area, []).append(result)
    return {
        "impl": impl,
        "versions": versions,
        "device": device,
        "graph_mode": graph_mode,
        "complete": complete,
        "collected": collected,
        "error": None if error is None else {"kind": error.kind, "message": error.message},
        "partial": partial_lines(results, collected),
        "summary": _count(results),
        "areas": {area: _count(areas[area]) for area in sorted(areas)},
        "tests": [
            {
                "id": r.info.id,
                "nodeid": r.info.nodeid,
                "area": r.info.area,
                "kind": r.info.kind,
                "apis": list(r.info.apis),
                "markers": list(r.info.markers),
                "outcome": r.outcome,
                "duration": round(r.duration, 4),
                "message": r.message,
            }
            for r in results
        ],
        **({} if coverage is None else {"coverage": coverage}),
    }


def partial_lines(results: list[ItemResult], collected: int | None) -> list[str]:
    """One line per reason that tests did not run, with how many: why the run is partial."""
    reasons: dict[str, int] = {}
    for result in results:
        if result.outcome == "not_run":
            reasons[result.message] = reasons.get(result.message, 0) + 1
    total = len(results) if collected is None else max(collected, len(results))
    return [f"{count} of {total} tests did not run: {reason}" for reason, count in reasons.items()]


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """Header, one row per area, and the total row of the per-area table."""
    rows = [["area", *COUNTS, "total"]]
    for area, counts in [*report["areas"].items(), ("total", report["summary"])]:
        rows.append([area, *(str(counts[key]) for key in COUNTS), str(sum(counts.values()))])
    return rows


def render_text(report: dict[str, Any]) -> list[str]:
    """The per-area table as aligned text lines."""
    rows = table_rows(report)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(-1, lines[1])
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    """The report's summary as Markdown: versions, device and the per-area table."""
    versions = ", ".join(f"{name} {version}" for name, version in report["versions"].items())
    rows = table_rows(report)
    lines = [
        f"# NNX conformance: {report['impl']}",
        "",
        f"Versions: {versions}. Device: {report['device']}. Graph mode: {report.get('graph_mode', 'graph')}.",
        "",
        *status_lines(report),
        "| " + " | ".join(rows[0]) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(rows[0]) - 1)) + " |",
    ]
    for row in rows[1:-1]:
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| " + " | ".join(f"**{cell}**" for cell in rows[-1]) + " |")
    failed = [t for t in report["tests"] if t["outcome"] in ("failed", "xpassed")]
    if failed:
        lines += ["", "## Failures", ""]
        lines += [
            f"- `{t['id']}` ({t['outcome']}): {t['message'].splitlines()[0] if t['message'] else ''}" for t in failed
        ]
    lines += coverage_markdown_lines(report)
    return "\n".join(lines) + "\n"


def status_lines(report: dict[str, Any]) -> list[str]:
    """What keeps the report from being a whole run's verdict: a run-level error, tests that
    did not run, an early stop."""
    lines = []
    error = report.get("error")
    if error:
        lines.append(f"Run-level error ({error['kind']}): {error['message']}")
    lines += [f"Partial run: {line}." for line in report.get("partial", [])]
    if not report.get("complete", True):
        finished = sum(report["summary"].values()) - report["summary"].get("not_run", 0)
        collected = report.get("collected")
        lines.append(f"Incomplete run: {finished} of {collected if collected is not None else '?'} tests finished.")
    return [*lines, ""] if lines else []


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once: a reader sees the old file or the new, never a part."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write(report: dict[str, Any], path: Path) -> Path:
    """Write the JSON report to ``path`` and its Markdown next to it; return the Markdown path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace(path, json.dumps(report, indent=2) + "\n")
    markdown = path.with_suffix(".md")
    _replace(markdown, render_markdown(report))
    return markdown
