"""The coverage section of the report: per public name, the tests that exercise it by
kind, and per documented parameter how many passing behavioural tests varied it.

A behavioural test is a test of any kind but ``signature`` (doc examples count); a name
is covered when such a test exercised it and passed. The section's two lists,
``without_behavioural_test`` and ``never_varied``, are what the Markdown, console and
HTML summaries show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from .coverage import Collected, documented_parameters
from .items import ItemInfo
from .surface import UNSHOWN_CONSTRUCTORS

STRUCTURAL_KINDS = frozenset({"signature"})
"""Test kinds that check the API's shape, not its behaviour."""

SHOWN_NAMES = 40
"""How many uncovered names the console lists one by one."""


class TestOutcome(Protocol):
    """A suite test as coverage sees it: what it is, and how it ended (None: not yet)."""

    @property
    def info(self) -> ItemInfo: ...

    @property
    def outcome(self) -> str | None: ...


def _passing_behavioural(test: TestOutcome) -> bool:
    return test.outcome == "passed" and test.info.kind not in STRUCTURAL_KINDS


def summarize(collected: Collected, tests: Mapping[str, TestOutcome]) -> dict[str, Any]:
    """The report's ``coverage`` section: a watched name is credited from the records of the
    ``tests`` (by node id), any other from the tests that name it in their ``apis``."""
    names, watched, records = collected.names, collected.watched, collected.records
    exercised: dict[str, list[TestOutcome]] = {name: [] for name in names}
    varied: dict[str, dict[str, list[str]]] = {name: {} for name in names}
    for nodeid, test in tests.items():
        record = records.get(nodeid)
        credited = set(record.names if record is not None else ()) & watched
        credited |= set(test.info.apis) - watched
        for name in credited & exercised.keys():
            exercised[name].append(test)
        if record is not None and _passing_behavioural(test):
            for name, parameters in record.varied.items():
                for parameter in parameters if name in varied else ():
                    varied[name].setdefault(parameter, []).append(test.info.id)
    entries = {
        name: _entry(name, entry, name in watched, exercised[name], varied[name]) for name, entry in names.items()
    }
    return {
        "watched": sorted(watched & names.keys()),
        "names": entries,
        "without_behavioural_test": [name for name, entry in entries.items() if not entry["passing_behavioural"]],
        "never_varied": {
            name: unvaried
            for name, entry in entries.items()
            if entry["watched"]
            and (unvaried := [p for p, found in entry["parameters"].items() if not found["varied_by"]])
        },
    }


def _entry(
    name: str, spec: dict[str, Any], watched: bool, tests: list[TestOutcome], varied: dict[str, list[str]]
) -> dict[str, Any]:
    by_kind: dict[str, list[str]] = {}
    for test in sorted(tests, key=lambda t: t.info.id):
        by_kind.setdefault(test.info.kind, []).append(test.info.id)
    parameters = {}
    for parameter in documented_parameters(name, spec):
        found = sorted(varied.get(parameter["name"], ()))
        count = len(found) if watched else None  # None: the name's calls cannot be watched
        parameters[parameter["name"]] = {"varied_by": count, "example": found[0] if found else None}
    return {
        "kind": spec["kind"],
        "watched": watched,
        "tests": by_kind,
        "passing_behavioural": sum(map(_passing_behavioural, tests)),
        "parameters": parameters,
    }


def _counts(section: dict[str, Any]) -> tuple[int, int, int, int]:
    """Names, names without a behavioural test, watched parameters, parameters never varied."""
    names = section["names"]
    parameters = sum(len(entry["parameters"]) for entry in names.values() if entry["watched"])
    never = sum(len(found) for found in section["never_varied"].values())
    return len(names), len(section["without_behavioural_test"]), parameters, never


def headline(section: dict[str, Any]) -> str:
    names, uncovered, parameters, never = _counts(section)
    return (
        f"API coverage: {names - uncovered} of {names} public names have a passing behavioural test; "
        f"{parameters - never} of {parameters} documented parameters were varied"
    )


def _joined(items: Iterable[str]) -> str:
    return ", ".join(items) or "none"


def text_lines(report: dict[str, Any]) -> list[str]:
    """The console's summary: the counts and the names with no passing behavioural test."""
    section = report.get("coverage")
    if section is None:
        return []
    uncovered = section["without_behavioural_test"]
    more = f" and {len(uncovered) - SHOWN_NAMES} more" if len(uncovered) > SHOWN_NAMES else ""
    never = sum(len(found) for found in section["never_varied"].values())
    return [
        headline(section),
        f"without a passing behavioural test: {_joined(uncovered[:SHOWN_NAMES])}{more}",
        f"parameters never varied: {never} (listed in the Markdown report)",
    ]


def markdown_lines(report: dict[str, Any]) -> list[str]:
    """The Markdown report's coverage section."""
    section = report.get("coverage")
    if section is None:
        return []
    unwatched = [name for name, entry in section["names"].items() if not entry["watched"]]
    lines = [
        "",
        "## API coverage",
        "",
        f"{headline(section)}.",
        "Names without Python code of their own to watch count the tests that name them: "
        f"{_joined(f'`{name}`' for name in unwatched)}.",
        "",
        "### Without a passing behavioural test",
        "",
    ]
    lines += [f"- `{name}`" for name in section["without_behavioural_test"]] or ["None."]
    lines += ["", "### Documented parameters never varied", ""]
    lines += [
        f"- `{name}`: {', '.join(f'`{p}`' for p in found)}" for name, found in section["never_varied"].items()
    ] or ["None."]
    lines += [
        "",
        "Constructors whose parameters are not counted, as the documentation never builds "
        "these classes nor documents their constructor:",
        "",
    ]
    lines += [f"- `{name}`: {reason}" for name, reason in UNSHOWN_CONSTRUCTORS.items()]
    return lines
