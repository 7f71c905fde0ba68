"""The suite's assertion helpers, in one format.

Each helper fails with a sentence about the spec, ``<what>: expected <spec>, got
<observed>`` (see :func:`expected_got`), and hides its own frame from the traceback
(``__tracebackhide__``), so that a failure points at the line of the test that called it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from .describe import difference, short
from .layer_cases import Case, case_difference
from .outcomes import (
    Outcome,
    Scenario,
    Side,
    class_names,
    deprecations,
    error_line,
    observe,
    recursion_difference,
    yardstick_side,
)
from .snapshots import variables_by_path


def expected_got(what: str, expected: str, got: str) -> str:
    """The suite's failure sentence: what was checked, what the spec expects, what came."""
    return f"{what}: expected {expected}, got {got}"


@contextlib.contextmanager
def raises_named(type_name: str, match: str) -> Iterator[pytest.ExceptionInfo[Exception]]:
    """``pytest.raises`` for an exception flax keeps in ``flax.errors`` (``TraceContextError``,
    ``ImmutableVariableError``): ``flax.nnx`` does not export them, so an implementation's
    own class is matched by its name, and its message by ``match``."""
    __tracebackhide__ = True
    with pytest.raises(Exception, match=match) as info:
        yield info
    got = type(info.value).__name__
    assert got == type_name, expected_got(f"the error whose message matches {match!r}", f"a {type_name}", f"a {got}")


def assert_same(
    yardstick: Any,
    nnx: Any,
    scenario: Scenario,
    *,
    mentions: Sequence[str] = (),
    deprecated: Sequence[str] = (),
    same_warnings: bool = False,
    what: str = "the scenario",
) -> Outcome:
    """Fails, saying what differed, unless ``scenario`` has the same outcome on ``nnx`` as on
    flax.nnx (the ``flax_nnx`` fixture): equal described results; or, where flax raises, an
    exception of flax's class (by name, or a subclass) whose message names each of ``mentions``;
    and a DeprecationWarning naming each of ``deprecated`` where flax emits one (with
    ``same_warnings``, warnings of exactly flax's categories). ``what`` names the scenario in
    the failure. Returns flax's outcome, so a test can also check that flax did what the spec says."""
    __tracebackhide__ = True
    expected = observe(yardstick_side(yardstick), scenario)
    actual = observe(Side(nnx), scenario)
    what = f"{nnx!r} on {what}"
    if expected.error is not None:
        flax_error = f"{error_line(expected.error)} as flax.nnx raises"
        assert actual.error is not None, expected_got(what, flax_error, f"no error and {short(actual.result)}")
        assert type(expected.error).__name__ in class_names(actual.error), expected_got(
            what, flax_error, error_line(actual.error)
        )
        for name in mentions:
            assert name in str(expected.error), expected_got(
                "flax.nnx's message", f"one naming {name!r}", error_line(expected.error)
            )
            assert name in str(actual.error), expected_got(
                f"{nnx!r}'s message", f"one naming {name!r} as flax.nnx's does", error_line(actual.error)
            )
    else:
        assert actual.error is None, expected_got(what, "no error, as flax.nnx runs it", error_line(actual.error))
        found = difference(expected.result, actual.result, "result")
        assert found is None, f"{what} differs from flax.nnx at {found}"
    assert_keeps_recursion(what, expected, actual)
    if same_warnings:
        assert actual.categories() == expected.categories(), expected_got(
            f"{what}: the warnings", f"{expected.categories()} as flax.nnx emits", str(actual.categories())
        )
    missing = set(deprecations(expected, deprecated)) - set(deprecations(actual, deprecated))
    assert not missing, expected_got(
        f"{nnx!r}'s warnings", f"a DeprecationWarning for {sorted(missing)} as flax.nnx emits", "none"
    )
    return expected


def assert_keeps_recursion(what: str, expected: Outcome, actual: Outcome) -> None:
    """Fails unless the call cost the thread no more levels of C recursion for good than flax.nnx's did."""
    __tracebackhide__ = True
    found = recursion_difference(expected, actual)
    assert found is None, f"{what}: {found}"


def assert_agrees(yardstick: Any, nnx: Any, case: Case) -> None:
    """Fails, saying what differed, unless ``nnx`` agrees on ``case`` with the yardstick
    (the ``flax_nnx`` fixture)."""
    __tracebackhide__ = True
    found = case_difference(case, yardstick_side(yardstick), Side(nnx))
    assert found is None, f"{case.name} on {nnx!r} differs from flax.nnx: {found}"


def assert_same_text(
    yardstick: Any,
    nnx: Any,
    produce: Callable[[Any], str],
    what: str,
    *,
    normalize: Callable[[str], str] = str,
    may_raise: bool = True,
) -> None:
    """Fails, with a diff, unless ``produce(nnx)`` gives flax.nnx's text (a table, a print)
    character for character, after ``normalize``. With ``may_raise``, flax raising is
    agreement where the implementation raises the same exception class; without it, an
    exception on either side propagates."""
    __tracebackhide__ = True
    expected, actual = yardstick_side(yardstick).record(produce), Side(nnx).record(produce)
    assert_keeps_recursion(f"{what} on {nnx!r}", expected, actual)
    for outcome in (expected, actual):
        if outcome.error is not None and not may_raise:
            raise outcome.error
    if expected.error is not None or actual.error is not None:
        assert type(actual.error) is type(expected.error), expected_got(
            what, error_line(expected.error) + " as flax.nnx gives", error_line(actual.error)
        )
        return
    found = difference(normalize(expected.result), normalize(actual.result))
    assert found is None, f"{what} on {nnx!r} differs from flax.nnx's: {found}"


def assert_shares_arrays(nnx: Any, original: Any, derived: Any, function: str) -> None:
    """Fails unless every Variable of ``derived`` holds the very array buffer of the original's."""
    __tracebackhide__ = True
    originals = variables_by_path(nnx, original)
    for path, variable in variables_by_path(nnx, derived).items():
        want, got = originals[path][...].unsafe_buffer_pointer(), variable[...].unsafe_buffer_pointer()
        assert got == want, expected_got(f"{function}: the Variable at {path}", "the original's array buffer", "a copy")


def assert_close(what: str, got: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Fails unless ``got`` has the shape of ``expected`` (a float64 computation of a
    documented formula) and agrees with it entry by entry within the tolerances."""
    __tracebackhide__ = True
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, expected_got(f"{what}: the shape", str(expected.shape), str(got.shape))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=f"{what}: expected the documented values")
