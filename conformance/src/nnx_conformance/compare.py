"""Two JSON reports side by side: what regressed, what was fixed, and the change per area.

    python -m nnx_conformance.compare BEFORE.json AFTER.json

prints Markdown and exits with status 1 when a test regressed, for CI. A test
*conforms* when it passed (or passed although listed as a known failure: xpassed) and
*fails* when it failed (or failed as listed: xfailed); it regresses when it conformed
before and fails after (listing a new failure in the expectations file hides it from
the run's verdict, not from this comparison), and is fixed the other way round.
Tests found in one report only, or that were not run in one of them, are listed
apart: they are neither.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFORMS = frozenset({"passed", "xpassed"})
FAILS = frozenset({"failed", "xfailed"})


@dataclass(frozen=True)
class Change:
    """One test whose outcome changed between the two reports (None: not in that report)."""

    id: str
    area: str
    before: str | None
    after: str | None
    message: str


@dataclass(frozen=True)
class Comparison:
    """The changed tests of two reports, sorted into regressions, fixes and other changes."""

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    regressed: list[Change]
    fixed: list[Change]
    other: list[Change]


def _tests(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {test["id"]: test for test in report["tests"]}


def compare(before: Mapping[str, Any], after: Mapping[str, Any]) -> Comparison:
    """Sort the tests whose outcome differs between ``before`` and ``after``."""
    old, new = _tests(before), _tests(after)
    regressed, fixed, other = [], [], []
    for test_id in sorted(old.keys() | new.keys()):
        was, now = old.get(test_id), new.get(test_id)
        outcome_before = None if was is None else was["outcome"]
        outcome_after = None if now is None else now["outcome"]
        if outcome_before == outcome_after:
            continue
        latest = now if now is not None else was
        assert latest is not None
        change = Change(test_id, latest["area"], outcome_before, outcome_after, latest.get("message", ""))
        if outcome_before in CONFORMS and outcome_after in FAILS:
            regressed.append(change)
        elif outcome_before in FAILS and outcome_after in CONFORMS:
            fixed.append(change)
        else:
            other.append(change)
    return Comparison(before, after, regressed, fixed, other)


def _delta(old: int, new: int) -> str:
    return str(new) if old == new else f"{old} → {new} ({new - old:+d})"


def _area_rows(comparison: Comparison) -> list[str]:
    """The Markdown rows of the areas whose counts changed, then the total."""
    old_areas, new_areas = comparison.before["areas"], comparison.after["areas"]
    outcomes = list(dict.fromkeys([*comparison.before["summary"], *comparison.after["summary"]]))
    rows = ["| area | " + " | ".join(outcomes) + " |", "| --- |" + " ---: |" * len(outcomes)]
    named = [
        (area, old_areas.get(area, {}), new_areas.get(area, {})) for area in sorted(old_areas.keys() | new_areas.keys())
    ]
    totals = ("**total**", comparison.before["summary"], comparison.after["summary"])
    for area, old, new in [*named, totals]:
        if area != totals[0] and all(old.get(o, 0) == new.get(o, 0) for o in outcomes):
            continue
        rows.append(f"| {area} | " + " | ".join(_delta(old.get(o, 0), new.get(o, 0)) for o in outcomes) + " |")
    return rows


def _change_lines(changes: Sequence[Change], with_message: bool) -> list[str]:
    lines = []
    for change in changes:
        line = f"- `{change.id}` ({change.area}): {change.before or 'absent'} → {change.after or 'absent'}"
        first = change.message.strip().splitlines()[0] if with_message and change.message.strip() else ""
        lines.append(f"{line}: {first[:200]}" if first else line)
    return lines


def render(comparison: Comparison) -> str:
    """The comparison as Markdown."""
    before, after = comparison.before, comparison.after
    lines = [
        f"# NNX conformance: {before['impl']} → {after['impl']}",
        "",
        f"{len(comparison.regressed)} regressed, {len(comparison.fixed)} fixed, {len(comparison.other)} other changes.",
        "",
        "## By area (areas that changed)",
        "",
        *_area_rows(comparison),
    ]
    sections = [
        ("Regressed", comparison.regressed, True),
        ("Fixed", comparison.fixed, False),
        ("Other changes", comparison.other, False),
    ]
    for title, changes, with_message in sections:
        if changes:
            lines += ["", f"## {title}", "", *_change_lines(changes, with_message)]
    return "\n".join(lines) + "\n"


def _read(path: str) -> Mapping[str, Any]:
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read the report {path}: {exc}") from None
    if not isinstance(report, dict) or not {"impl", "summary", "areas", "tests"} <= report.keys():
        raise SystemExit(f"{path} is not a conformance report (it lacks impl, summary, areas or tests)")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nnx_conformance.compare", description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the earlier JSON report (reports/<impl>/conformance.json)")
    parser.add_argument("after", help="the later JSON report")
    args = parser.parse_args(argv)
    comparison = compare(_read(args.before), _read(args.after))
    sys.stdout.write(render(comparison))
    return 1 if comparison.regressed else 0


if __name__ == "__main__":
    raise SystemExit(main())
