"""Running a call on one implementation and recording what it did: its result, the
exception it raised, the warnings it emitted and the C recursion levels it cost the thread
for good (see :mod:`.recursion`).

A :class:`Side` is one implementation in a comparison (the implementation under test, or
flax.nnx beside it with the context its code must run in). A scenario is a function
``scenario(nnx)`` that builds its objects with ``nnx``, calls the API under test and
returns what should agree: the results and the objects it was given (so the state they
are left in counts too); :func:`observe` records its :class:`Outcome`, the result
described by :func:`describe.describe`.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import recursion
from .describe import describe

Scenario = Callable[[Any], Any]


class WarningSeen(NamedTuple):
    """A warning a call emitted: its category's name and its message."""

    category: str
    message: str


class Outcome(NamedTuple):
    """What one call did on one implementation: its result (what it returned, or with
    :func:`observe` its description), or the exception it raised; its warnings; and how many
    levels of C recursion the thread could no longer enter after it (0 unless it leaked them)."""

    result: Any
    error: Exception | None
    warnings: tuple[WarningSeen, ...]
    recursion_lost: int = 0

    def categories(self) -> list[str]:
        """The names of the categories of its warnings, each once, sorted."""
        return sorted({w.category for w in self.warnings})


@dataclass(frozen=True)
class Side:
    """One implementation in a comparison: its nnx module and the context its code must run in."""

    nnx: Any
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext

    def record(self, fn: Callable[..., Any], *args: Any) -> Outcome:
        """``fn(nnx, *args)`` in this side's context, every warning recorded."""
        before = recursion.capacity()
        with self.context(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                returned, error = fn(self.nnx, *args), None
            except Exception as raised:  # noqa: BLE001 - the exception is part of what is compared
                returned, error = None, raised
        lost = before - recursion.capacity()
        seen = tuple(WarningSeen(w.category.__name__, str(w.message)) for w in caught)
        return Outcome(returned, error, seen, lost)

    def run(self, fn: Callable[..., Any], *args: Any, catch: bool = True) -> Any:
        """``fn(nnx, *args)`` in this side's context; with ``catch``, an exception is returned
        (without it, raised)."""
        outcome = self.record(fn, *args)
        if outcome.error is None:
            return outcome.result
        if not catch:
            raise outcome.error
        return outcome.error


def yardstick_side(yardstick: Any) -> Side:
    """The side of flax.nnx beside the implementation (the ``flax_nnx`` fixture)."""
    return Side(yardstick.nnx, yardstick.active)


def observe(side: Side, scenario: Scenario) -> Outcome:
    """Run ``scenario(side.nnx)`` in ``side``'s context, recording its described result, error and warnings."""
    return side.record(lambda nnx: describe(nnx, scenario(nnx)))


def recursion_difference(expected: Outcome, actual: Outcome) -> str | None:
    """How ``actual``'s call left the thread less C recursion than flax's ``expected`` did, or
    None where it did not: a program making such a call often enough ends in RecursionError."""
    if actual.recursion_lost <= expected.recursion_lost:
        return None
    return (
        f"it leaves the thread unable to enter {actual.recursion_lost} levels of C recursion, flax.nnx's call"
        f" {expected.recursion_lost} (an exception raised through C code that does not give back the levels it entered)"
    )


def error_line(error: BaseException | None) -> str:
    """An exception as its class's name and the first line of its message."""
    if error is None:
        return "no error"
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}({lines[0][:200] if lines else ''!r})"


def class_names(error: BaseException) -> set[str]:
    """The names of an exception's class and its bases (classes compared across implementations)."""
    return {cls.__name__ for cls in type(error).__mro__}


def deprecations(outcome: Outcome, names: Sequence[str]) -> list[str]:
    """The ``names`` that a DeprecationWarning (or subclass) of ``outcome`` mentions."""
    return [n for n in names if any("Deprecat" in w.category and n in w.message for w in outcome.warnings)]
