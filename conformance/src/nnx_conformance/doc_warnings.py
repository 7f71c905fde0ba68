"""The deprecations each doc example makes flax emit: part of what the example documents.

``data/doc_warnings.json`` holds, for every example that flax.nnx 0.12.12 makes warn, the
DeprecationWarnings and FutureWarnings it emits, each as its category and the deprecated
name its message quotes (```flax.nnx.State``` gives ``State``, ``'.value' access`` gives
``.value``). ``tools/doc_warnings.py`` writes it from a run of the pinned flax, and with
``--check`` says whether a new run gives the same file. An implementation passes an
example only when it emits the same set: a missing deprecation and an extra one both fail
the example. Other categories (a UserWarning from a library) are not compared.
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

DATA = Path(__file__).parent / "data" / "doc_warnings.json"
COMPARED = (DeprecationWarning, FutureWarning)
_QUOTED = re.compile(r"[`']([^`'\s]+)[`']")


class WarningKey(NamedTuple):
    """A warning as examples are compared by: its category's name and the deprecated name."""

    category: str
    name: str

    def describe(self) -> str:
        return f"{self.category} naming {self.name!r}"


def deprecated_name(message: str) -> str:
    """The first name the message quotes, without its module path (the whole first line if none)."""
    found = _QUOTED.search(message)
    if found is None:
        return message.strip().splitlines()[0] if message.strip() else ""
    name = found.group(1)
    return name if name.startswith(".") else name.rpartition(".")[2]


def _category(caught: warnings.WarningMessage) -> str | None:
    for compared in COMPARED:
        if issubclass(caught.category, compared):
            return compared.__name__
    return None


@dataclass
class Recording:
    """The warnings of one example, filled in while it runs (see :func:`recording`)."""

    caught: list[warnings.WarningMessage] = field(default_factory=list)

    def keys(self) -> frozenset[WarningKey]:
        return frozenset(
            WarningKey(category, deprecated_name(str(caught.message)))
            for caught in self.caught
            if (category := _category(caught)) is not None
        )


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Record every warning the block emits, each time it is emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield Recording(caught)


def difference(expected: frozenset[WarningKey], got: frozenset[WarningKey]) -> str | None:
    """What an example's warnings lack and add next to flax's, or None when they agree."""
    missing = sorted(key.describe() for key in expected - got)
    extra = sorted(key.describe() for key in got - expected)
    if not missing and not extra:
        return None
    parts = [f"flax 0.12.12 emits {', '.join(missing)}, which the implementation does not"] if missing else []
    parts += [f"the implementation emits {', '.join(extra)}, which flax 0.12.12 does not"] if extra else []
    return "; ".join(parts)


@dataclass(frozen=True)
class DocWarnings:
    """The committed record: example id -> the warnings flax emits on it."""

    examples: Mapping[str, frozenset[WarningKey]]

    @classmethod
    def read(cls, path: Path = DATA) -> DocWarnings:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls({example: frozenset(WarningKey(*key) for key in keys) for example, keys in data.items()})

    def expected(self, example_id: str) -> frozenset[WarningKey]:
        return self.examples.get(example_id, frozenset())

    def dumps(self) -> str:
        """The file's text: one line per example that warns, examples and keys sorted."""
        lines = [
            f" {json.dumps(example)}: {json.dumps(sorted(keys))}"
            for example, keys in sorted(self.examples.items())
            if keys
        ]
        return "{\n" + ",\n".join(lines) + "\n}\n"
