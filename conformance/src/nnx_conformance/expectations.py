"""Expected failures of an implementation, applied as strict xfails.

An expectations file (``conformance/expectations/flax.txt`` for ``flax.nnx``,
``reference.txt`` for ``nnx_reference``, ``flax-tree.txt`` and ``reference-tree.txt``
under ``--graph-mode tree``, or ``--expectations FILE``) lists test-id patterns
(``fnmatch``), each with ``# reason``. The **test id** a pattern is matched
against is:

- for a doc example, its manifest example id: ``object/flax.nnx.data:1``,
  ``guide:transforms/cell:12`` (stable across page regenerations, unlike line numbers);
- for any other suite test, its pytest node id relative to the ``spec`` folder:
  ``errors/test_graph.py::test_merge_rejects_a_state_that_does_not_match_its_graphdef``.

A listed test that passes fails the run (``XPASS(strict)``): fixed tests must leave
the list. Patterns that matched no collected test are reported as warnings.

:func:`update` rewrites a file from a run's report (``--update-expectations``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .graph_modes import GraphMode
from .impl import FLAX_NNX
from .patterns import PLACEHOLDER, PatternEntry, PatternList

# The expectations file of each known implementation, under conformance/expectations/.
DEFAULT_FILES = {FLAX_NNX: "flax.txt", "nnx_reference": "reference.txt"}
TREE_FILES = {FLAX_NNX: "flax-tree.txt", "nnx_reference": "reference-tree.txt"}
"""The same under ``--graph-mode tree``; flax's is also the tree-mode baseline (see :func:`baseline_file`)."""


def default_file(impl: str, mode: GraphMode) -> str | None:
    """The name of ``impl``'s expectations file in ``mode``, if it has one."""
    return (DEFAULT_FILES if mode.graph else TREE_FILES).get(impl)


def baseline_file(impl: str, mode: GraphMode) -> str | None:
    """The name of the file of flax's failures in ``mode`` that are not held against ``impl``.

    In graph mode the spec is the pinned release as its documentation runs (its defects
    are in ``spec_defects.txt``). In tree mode flax itself fails some examples that assume
    graph mode: what flax 0.12.12 fails in tree mode is outside the tree-mode spec, so
    for another implementation those tests are skipped as spec defects of that mode.
    """
    return None if mode.graph or impl == FLAX_NNX else TREE_FILES[FLAX_NNX]


def apply(item: pytest.Item, test_id: str, expectations: PatternList) -> None:
    """Mark ``item`` as a strict xfail when an expectation pattern lists it."""
    entry = expectations.match(test_id)
    if entry is not None:
        item.add_marker(pytest.mark.xfail(strict=True, reason=entry.reason))


@dataclass
class Update:
    """What :func:`update` changed in an expectations file."""

    added: list[str] = field(default_factory=list)  # ids of new failures, listed with a placeholder reason
    removed: list[PatternEntry] = field(default_factory=list)  # every test they matched passed
    narrowed: list[PatternEntry] = field(default_factory=list)  # some of their tests passed: the others are listed
    unmatched: list[PatternEntry] = field(default_factory=list)  # matched no test of the run: kept

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.narrowed)


def exact_pattern(test_id: str) -> str:
    """An fnmatch pattern that matches ``test_id``: its own text, wildcards escaped (and the
    characters a pattern file cannot hold, a space and ``#``, matched by ``?``)."""
    return re.sub(r"[][*?# ]", lambda found: "?" if found[0] in "# " else f"[{found[0]}]", test_id)


def _entry_lines(entry: PatternEntry, tests: Sequence[Mapping[str, Any]], update: Update) -> list[str]:
    """The lines that replace ``entry``'s, given the tests of the run it matched."""
    if not tests:
        update.unmatched.append(entry)
    passing = [test for test in tests if test["outcome"] == "xpassed"]
    if not passing:
        return [f"{entry.pattern}  # {entry.reason}"]
    if len(passing) == len(tests):
        update.removed.append(entry)
        return []
    update.narrowed.append(entry)
    return [f"{exact_pattern(test['id'])}  # {entry.reason}" for test in tests if test["outcome"] != "xpassed"]


def update(path: Path, tests: Sequence[Mapping[str, Any]]) -> Update:
    """Rewrite the expectations file at ``path`` from the tests of a run's report.

    Entries keep their reasons and places; an entry whose tests all passed leaves, one
    whose tests partly passed is replaced by the ids of those still failing; each failed
    test no entry lists is added with a placeholder reason, which the next run rejects
    until a real reason is written. Entries that matched no test (the run may have been
    a subset) stay, and are reported.
    """
    patterns = PatternList.read(path)
    matched: dict[PatternEntry, list[Mapping[str, Any]]] = {entry: [] for entry in patterns.entries}
    new = []
    for test in tests:
        entry = patterns.match(test["id"])
        if entry is not None:
            matched[entry].append(test)
        elif test["outcome"] == "failed":
            new.append(test)
    result = Update()
    entries = iter(patterns.entries)
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            lines.append(line)
            continue
        entry = next(entries)
        lines += _entry_lines(entry, matched[entry], result)
    for test in new:
        summary = test["message"].strip().splitlines()[0][:160] if test["message"].strip() else "no message"
        lines.append(f"{exact_pattern(test['id'])}  # {PLACEHOLDER}: write why it fails (the run said: {summary})")
        result.added.append(test["id"])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return result
