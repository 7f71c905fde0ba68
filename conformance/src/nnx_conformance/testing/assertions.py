"""The suite's assertion helpers, in one format.

Each helper fails with a sentence about the spec, ``<what>: expected <spec>, got
<observed>`` (see :func:`expected_got`), and hides its own frame from the traceback
(``__tracebackhide__``), so that a failure points at the line of the test that called it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from .compare_state import Outcome, Scenario, class_names, deprecations, error_line, first_difference, observe, short
from .differential import Case, Side, run_case
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
) -> Outcome:
    """Fails, saying what differed, unless ``scenario`` has the same outcome on ``nnx`` as on
    flax.nnx (the ``flax_nnx`` fixture): equal described results; or, where flax raises, an
    exception of flax's class (by name, or a subclass) whose message names each of ``mentions``;
    and a DeprecationWarning naming each of ``deprecated`` where flax emits one. Returns flax's
    outcome, so a test can also check that flax did what the spec says."""
    __tracebackhide__ = True
    expected = observe(Side(yardstick.nnx, yardstick.active), scenario)
    actual = observe(Side(nnx), scenario)
    what = f"{nnx!r} on the scenario"
    if expected.error is not None:
        flax_error = f"{error_line(expected.error)} as flax.nnx raises"
        assert actual.error is not None, expected_got(what, flax_error, f"no error and {short(actual.result)}")
        assert type(expected.error).__name__ in class_names(actual.error), (
            expected_got(what, flax_error, error_line(actual.error))
        )
        for name in mentions:
            assert name in str(expected.error), (
                expected_got("flax.nnx's message", f"one naming {name!r}", error_line(expected.error))
            )
            assert name in str(actual.error), (
                expected_got(f"{nnx!r}'s message", f"one naming {name!r} as flax.nnx's does", error_line(actual.error))
            )
    else:
        assert actual.error is None, expected_got(what, "no error, as flax.nnx runs it", error_line(actual.error))
        difference = first_difference(expected.result, actual.result)
        assert difference is None, f"{what} differs from flax.nnx at {difference}"
    missing = set(deprecations(expected, deprecated)) - set(deprecations(actual, deprecated))
    assert not missing, expected_got(
        f"{nnx!r}'s warnings", f"a DeprecationWarning for {sorted(missing)} as flax.nnx emits", "none"
    )
    return expected


def assert_agrees(yardstick: Any, nnx: Any, case: Case) -> None:
    """Fails, saying what differed, unless ``nnx`` agrees on ``case`` with the yardstick
    (the ``flax_nnx`` fixture)."""
    __tracebackhide__ = True
    ok, note = run_case(case, Side(yardstick.nnx, yardstick.active), Side(nnx))
    assert ok, f"{case.name} on {nnx!r} differs from flax.nnx: {note}"


def assert_shares_arrays(nnx: Any, original: Any, derived: Any, function: str) -> None:
    """Fails unless every Variable of ``derived`` holds the very array buffer of the original's."""
    __tracebackhide__ = True
    originals = variables_by_path(nnx, original)
    for path, variable in variables_by_path(nnx, derived).items():
        want, got = originals[path][...].unsafe_buffer_pointer(), variable[...].unsafe_buffer_pointer()
        assert got == want, expected_got(
            f"{function}: the Variable at {path}", "the original's array buffer", "a copy"
        )


def assert_close(what: str, got: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Fails unless ``got`` has the shape of ``expected`` (a float64 computation of a
    documented formula) and agrees with it entry by entry within the tolerances."""
    __tracebackhide__ = True
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, expected_got(f"{what}: the shape", str(expected.shape), str(got.shape))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=f"{what}: expected the documented values")
