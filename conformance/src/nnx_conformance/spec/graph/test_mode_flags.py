"""Laws of the configuration setters: set_graph_mode, set_graph_updates, var_defaults.

Each one sets its value when called and the value stays set; used as a context
manager it restores, on exit, the value current before the call; used as a
decorator it leaves the value alone when the function is defined and applies it
only while the function runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.kind("property")

FLAG_SETTERS = ("set_graph_mode", "set_graph_updates")
DEFAULT_FIELDS = ("hijax", "ref")


def current_flag(nnx: Any, setter: str) -> bool:
    return bool(getattr(nnx, setter).current_value())


def current_defaults(nnx: Any) -> tuple[bool, bool]:
    defaults = nnx.var_defaults()
    return bool(defaults.hijax), bool(defaults.ref)


@contextmanager
def flag_restored(nnx: Any, setter: str) -> Iterator[None]:
    """Puts the flag back (with a plain call) whatever the test did."""
    before = current_flag(nnx, setter)
    try:
        yield
    finally:
        getattr(nnx, setter)(before)


@contextmanager
def defaults_restored(nnx: Any) -> Iterator[None]:
    hijax, ref = current_defaults(nnx)
    try:
        yield
    finally:
        nnx.var_defaults(hijax=hijax, ref=ref)


@pytest.mark.apis(*FLAG_SETTERS)
@pytest.mark.parametrize("setter", FLAG_SETTERS)
@given(start=st.booleans(), value=st.booleans())
def test_a_plain_call_sets_the_flag_and_it_stays_set(nnx: Any, setter: str, start: bool, value: bool) -> None:
    with flag_restored(nnx, setter):
        getattr(nnx, setter)(start)
        getattr(nnx, setter)(value)
        assert current_flag(nnx, setter) == value, f"after {setter}({value}) the flag is not {value}"


@pytest.mark.apis(*FLAG_SETTERS)
@pytest.mark.parametrize("setter", FLAG_SETTERS)
@given(start=st.booleans(), value=st.booleans(), inner=st.booleans())
def test_a_with_block_sets_the_flag_and_restores_the_previous_value_on_exit(
    nnx: Any, setter: str, start: bool, value: bool, inner: bool
) -> None:
    set_flag = getattr(nnx, setter)
    with flag_restored(nnx, setter):
        set_flag(start)
        with set_flag(value):
            assert current_flag(nnx, setter) == value, f"inside `with {setter}({value})` the flag is not {value}"
            set_flag(inner)
            assert current_flag(nnx, setter) == inner, f"after a plain {setter}({inner}) the flag is not {inner}"
        assert current_flag(nnx, setter) == start, (
            f"after `with {setter}({value})` (with {setter}({inner}) inside) the flag is not back to {start}"
        )


@pytest.mark.apis(*FLAG_SETTERS)
@pytest.mark.parametrize("setter", FLAG_SETTERS)
@given(start=st.booleans(), value=st.booleans())
def test_a_decorator_sets_the_flag_only_while_the_function_runs(
    nnx: Any, setter: str, start: bool, value: bool
) -> None:
    set_flag = getattr(nnx, setter)
    with flag_restored(nnx, setter):
        set_flag(start)

        @set_flag(value)
        def read() -> bool:
            """Reads the flag."""
            return current_flag(nnx, setter)

        assert (read.__name__, read.__doc__) == ("read", "Reads the flag."), (
            f"a function decorated with {setter}({value}) lost its name and docstring: {read.__name__!r}, "
            f"{read.__doc__!r}"
        )
        assert current_flag(nnx, setter) == start, (
            f"defining a function decorated with {setter}({value}) changed the flag"
        )
        assert read() == value, f"inside a function decorated with {setter}({value}) the flag is not {value}"
        assert current_flag(nnx, setter) == start, (
            f"calling a function decorated with {setter}({value}) changed the flag"
        )
        assert read() == value, f"a second call of a function decorated with {setter}({value}) does not see {value}"


def var_defaults_kwargs() -> st.SearchStrategy[dict[str, bool]]:
    return st.dictionaries(st.sampled_from(DEFAULT_FIELDS), st.booleans(), min_size=1)


def updated(defaults: tuple[bool, bool], kwargs: dict[str, bool]) -> tuple[bool, bool]:
    return kwargs.get("hijax", defaults[0]), kwargs.get("ref", defaults[1])


@pytest.mark.apis("var_defaults")
@given(start=st.tuples(st.booleans(), st.booleans()), kwargs=var_defaults_kwargs())
def test_a_plain_var_defaults_call_sets_only_the_given_fields_and_they_stay_set(
    nnx: Any, start: tuple[bool, bool], kwargs: dict[str, bool]
) -> None:
    with defaults_restored(nnx):
        nnx.var_defaults(hijax=start[0], ref=start[1])
        nnx.var_defaults(**kwargs)
        expected = updated(start, kwargs)
        assert current_defaults(nnx) == expected, (
            f"after var_defaults(**{kwargs}) from {start} the (hijax, ref) defaults are not {expected}"
        )


@pytest.mark.apis("var_defaults")
@given(start=st.tuples(st.booleans(), st.booleans()), kwargs=var_defaults_kwargs())
def test_a_var_defaults_with_block_restores_the_previous_defaults_on_exit(
    nnx: Any, start: tuple[bool, bool], kwargs: dict[str, bool]
) -> None:
    with defaults_restored(nnx):
        nnx.var_defaults(hijax=start[0], ref=start[1])
        with nnx.var_defaults(**kwargs):
            expected = updated(start, kwargs)
            assert current_defaults(nnx) == expected, (
                f"inside `with var_defaults(**{kwargs})` the defaults are not {expected}"
            )
        assert current_defaults(nnx) == start, (
            f"after `with var_defaults(**{kwargs})` the defaults are not back to {start}"
        )


@pytest.mark.apis("var_defaults")
@given(start=st.tuples(st.booleans(), st.booleans()), kwargs=var_defaults_kwargs())
def test_a_var_defaults_decorator_sets_the_defaults_only_while_the_function_runs(
    nnx: Any, start: tuple[bool, bool], kwargs: dict[str, bool]
) -> None:
    with defaults_restored(nnx):
        nnx.var_defaults(hijax=start[0], ref=start[1])
        read: Callable[[], tuple[bool, bool]] = nnx.var_defaults(**kwargs)(lambda: current_defaults(nnx))
        assert current_defaults(nnx) == start, (
            f"defining a function decorated with var_defaults(**{kwargs}) changed the defaults"
        )
        expected = updated(start, kwargs)
        assert read() == expected, (
            f"inside a function decorated with var_defaults(**{kwargs}) the defaults are not {expected}"
        )
        assert current_defaults(nnx) == start, (
            f"calling a function decorated with var_defaults(**{kwargs}) changed the defaults"
        )
