"""Files of test-id patterns with reasons: the expectations lists and spec_defects.txt.

Each non-blank line that is not a comment holds one ``fnmatch`` pattern and, after
``#``, the reason it is there::

    guide:transforms/cell:12   # flax 0.12.12 error: ...; the guide mutates a Variable in place

A line with a pattern but no reason is an error: every entry must say why. A reason
that begins with :data:`PLACEHOLDER` (what ``--update-expectations`` writes for a new
failure) is no reason yet, and is an error too.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

PLACEHOLDER = "TODO"
"""How a reason still to be written begins."""


class PatternFileError(ValueError):
    """A malformed line in a pattern file."""


@dataclass(frozen=True)
class PatternEntry:
    """One line of a pattern file."""

    pattern: str
    reason: str
    source: str  # "path:line", for messages

    def matches(self, test_id: str) -> bool:
        return fnmatch.fnmatchcase(test_id, self.pattern)


@dataclass
class PatternList:
    """The entries of one pattern file, remembering which of them matched a test."""

    entries: list[PatternEntry] = field(default_factory=list)
    used: set[PatternEntry] = field(default_factory=set)

    @classmethod
    def read(cls, path: Path | None) -> PatternList:
        """Parse ``path`` (no path: an empty list); raise PatternFileError on a bad line."""
        if path is None:
            return cls()
        entries = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            pattern, _, reason = text.partition("#")
            pattern, reason = pattern.strip(), reason.strip()
            where = f"{path}:{number}"
            if not reason:
                raise PatternFileError(
                    f"{where}: the entry {pattern!r} has no reason; write '{pattern}  # why it is listed'"
                )
            if reason.startswith(PLACEHOLDER):
                raise PatternFileError(
                    f"{where}: the entry {pattern!r} has no reason yet ({reason!r}); replace it with why it is listed"
                )
            if len(pattern.split()) != 1:
                raise PatternFileError(f"{where}: expected one test-id pattern, got {pattern!r}")
            entries.append(PatternEntry(pattern, reason, where))
        return cls(entries)

    def match(self, test_id: str) -> PatternEntry | None:
        """The first entry matching ``test_id``, marked as used."""
        for entry in self.entries:
            if entry.matches(test_id):
                self.used.add(entry)
                return entry
        return None

    def unused(self) -> list[PatternEntry]:
        """Entries that matched no test so far."""
        return [entry for entry in self.entries if entry not in self.used]
