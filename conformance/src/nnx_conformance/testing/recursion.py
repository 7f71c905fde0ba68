"""How deep the interpreter can still recurse through C code from here: a call that lowers
it for good has leaked the thread's C recursion budget (an exception raised through a C
extension that does not give back the levels it entered, as jaxlib's pytree flatten does on
Python 3.12), and a program that makes the call often enough ends in a RecursionError.

The capacity is measured by comparing two nested tuples of equal shape: each level of a
tuple comparison enters one level of C recursion and nothing else.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

LIMIT = 20_000
"""The deepest comparison tried: capacities above it read as ``LIMIT``."""


@functools.cache
def _chains() -> tuple[list[tuple], list[tuple]]:
    """Two lists of nested tuples, distinct objects of equal shape: entry ``k`` is ``k`` deep."""

    def chain() -> list[tuple]:
        links: list[tuple] = [()]
        for _ in range(LIMIT):
            links.append((links[-1],))
        return links

    return chain(), chain()


def _reaches(depth: int) -> bool:
    left, right = _chains()
    try:
        return left[depth] == right[depth]
    except RecursionError:
        return False


@dataclass
class _Gauge:
    """The capacity last measured: the guess the next measurement confirms first."""

    last: int | None = None

    def measure(self) -> int:
        guess = self.last
        if guess is not None and _reaches(guess) and (guess == LIMIT or not _reaches(guess + 1)):
            return guess
        low, high = 0, LIMIT  # _reaches(low); the capacity lies in [low, high]
        while low < high:
            middle = (low + high + 1) // 2
            if _reaches(middle):
                low = middle
            else:
                high = middle - 1
        self.last = low
        return low


_GAUGE = _Gauge()


def capacity() -> int:
    """The depth of the deepest tuple comparison that runs from the caller's frame, up to
    :data:`LIMIT`: two comparisons where it is what was last measured, a search where not."""
    return _GAUGE.measure()
