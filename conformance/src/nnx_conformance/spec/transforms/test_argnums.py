"""Differential tests of the positions transforms are told about: ``argnums`` past the
arguments a caller passes, which ``grad`` and ``value_and_grad`` refuse with flax's TypeError
in every mode (also for a function that takes ``*args``); ``jit``'s static arguments changing
between calls on the same model, at positions past a signature's named parameters, and beside
``in_shardings`` and donated arguments."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from jax.sharding import NamedSharding, PartitionSpec

from nnx_conformance.testing.assertions import assert_same, expected_got

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.documented(None)
@given(
    argnums=st.sampled_from([0, 1, 2, (0, 1), (1, 2), (0,)]),
    passed=st.integers(1, 2),
    transform=st.sampled_from(["grad", "value_and_grad"]),
    mode=st.sampled_from([(True, True), (True, False), (False, False)]),
)
def test_argnums_past_the_passed_arguments_are_refused_as_by_flax(
    nnx: Any, flax_nnx: Any, argnums: Any, passed: int, transform: str, mode: tuple[bool, bool]
) -> None:
    graph, graph_updates = mode

    def scenario(nnx: Any) -> Any:
        def loss(x: Any, *rest: Any) -> Any:
            return (x**2).sum() + sum((r**2).sum() for r in rest)

        arguments = [jnp.arange(2.0) + i for i in range(passed)]
        return getattr(nnx, transform)(loss, argnums=argnums, graph=graph, graph_updates=graph_updates)(*arguments)

    assert_same(
        flax_nnx,
        nnx,
        scenario,
        mentions=("argnums",) if max((argnums,) if isinstance(argnums, int) else argnums) >= passed else (),
    )


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's static_argnums")
@given(scales=st.lists(st.integers(1, 3), min_size=2, max_size=4), graph=st.booleans())
def test_a_jitted_call_with_other_static_arguments_on_the_same_model_computes_afresh_as_flax(
    nnx: Any, flax_nnx: Any, scales: list[int], graph: bool
) -> None:
    def scenario(nnx: Any) -> Any:
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        scaled = nnx.jit(lambda model, scale: model(jnp.ones(2)) * scale, static_argnums=1, graph=graph)
        return [scaled(model, scale) for scale in scales]

    assert_same(flax_nnx, nnx, scenario)


def _sum_of_arrays(*arguments: Any) -> Any:
    """The sum of the array arguments times the product of the int ones: a function whose
    result shows which arguments were static."""
    arrays = [a for a in arguments if not isinstance(a, int)]
    scale = 1
    for a in arguments:
        if isinstance(a, int):
            scale *= a
    return sum(arrays[1:], arrays[0]) * scale


@st.composite
def _static_layouts(draw: st.DrawFn) -> tuple[int, tuple[int, ...]]:
    """A count of positional arguments and the positions among them that are static (never all)."""
    count = draw(st.integers(2, 4))
    static = draw(st.lists(st.integers(0, count - 1), unique=True, max_size=count - 1).map(sorted))
    return count, tuple(static)


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's static_argnums")
@given(layout=_static_layouts(), graph=st.booleans())
def test_static_positions_past_a_signatures_named_parameters_act_as_in_flax(
    nnx: Any, flax_nnx: Any, layout: tuple[int, tuple[int, ...]], graph: bool
) -> None:
    count, static = layout

    def scenario(nnx: Any) -> Any:
        def f(x: Any, *rest: Any) -> Any:
            return _sum_of_arrays(x, *rest)

        arguments = [i + 2 if i in static else jnp.arange(2.0) + i for i in range(count)]
        return nnx.jit(f, static_argnums=static, graph=graph)(*arguments)

    assert_same(flax_nnx, nnx, scenario)


SIGNATURES = {
    "two parameters": lambda a, b: a * b,
    "two parameters, the second with a default": lambda a, b=2: a * b,
    "one parameter and *args": lambda a, *rest: a * len(rest),
}


@pytest.mark.apis("jit")
@pytest.mark.documented(None)
@given(
    signature=st.sampled_from(sorted(SIGNATURES)),
    argnums=st.lists(st.integers(-4, 4), max_size=2).map(tuple),
    graph=st.booleans(),
)
@example(signature="one parameter and *args", argnums=(4,), graph=True)  # past the arguments passed: ignored
@example(signature="one parameter and *args", argnums=(-3,), graph=False)  # before them: jax.jit's assertion
@example(signature="one parameter and *args", argnums=(-4,), graph=True)  # also where the position wraps to an array
def test_static_argnums_past_the_signature_are_refused_when_jitted_as_by_flax(
    nnx: Any, flax_nnx: Any, signature: str, argnums: tuple[int, ...], graph: bool
) -> None:
    """As ``jax.jit``: without ``*args``, a static position the signature does not have
    (negative ones counted from its end) is a ValueError when ``jit`` is applied; with
    ``*args``, one past the arguments passed is ignored and one before them asserts."""

    def scenario(nnx: Any) -> Any:
        jitted = nnx.jit(SIGNATURES[signature], static_argnums=argnums, graph=graph)
        return jitted(jnp.arange(2.0), 3)

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's in_shardings, static_argnums and donate_argnums")
@given(layout=_static_layouts(), extra=st.integers(-1, 1), donate=st.integers(0, 3), graph=st.booleans())
def test_in_shardings_name_the_dynamic_arguments_beside_static_and_donated_ones_as_in_flax(
    nnx: Any, flax_nnx: Any, layout: tuple[int, tuple[int, ...]], extra: int, donate: int, graph: bool
) -> None:
    """``in_shardings`` holds one entry per dynamic argument (jax.jit's rule): another count is
    refused; a donated argument is deleted after the call. (An empty tuple has a test of its own.)"""
    count, static = layout
    replicated = NamedSharding(jax.make_mesh((1,), ("devices",)), PartitionSpec())
    dynamic = count - len(static)
    donated = (donate,) if donate < count and donate not in static else ()

    def scenario(nnx: Any) -> Any:
        arguments = [i + 2 if i in static else jnp.arange(2.0) + i for i in range(count)]
        compiled = nnx.jit(
            _sum_of_arrays,
            static_argnums=static,
            donate_argnums=donated,
            in_shardings=(replicated,) * max(dynamic + extra, 1),
            graph=graph,
        )
        result = compiled(*arguments)
        return result, [a.is_deleted() for a in arguments if not isinstance(a, int)]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("error")
@pytest.mark.apis("jit")
@pytest.mark.documented(
    "docstring of flax.nnx.jit: in_shardings as jax.jit's, which refuses a tuple of another length than the arguments"
)
@pytest.mark.parametrize("graph", [True, False], ids=["graph-mode", "tree-mode"])
def test_an_empty_in_shardings_tuple_is_refused_with_a_value_error(nnx: Any, graph: bool) -> None:
    with pytest.raises(ValueError):
        nnx.jit(lambda x: x, in_shardings=(), graph=graph)(jnp.ones(2))


@pytest.mark.kind("property")
@pytest.mark.apis("jit")
@pytest.mark.documented("docstring of flax.nnx.jit: static_argnums is an int or a collection of ints")
@given(layout=_static_layouts().filter(lambda layout: len(layout[1]) == 1), graph=st.booleans())
def test_an_int_static_argnums_beside_in_shardings_acts_as_its_one_tuple(
    nnx: Any, layout: tuple[int, tuple[int, ...]], graph: bool
) -> None:
    count, (position,) = layout
    replicated = NamedSharding(jax.make_mesh((1,), ("devices",)), PartitionSpec())
    arguments = [position + 2 if i == position else jnp.arange(2.0) + i for i in range(count)]
    expected = _sum_of_arrays(*arguments)
    result = nnx.jit(_sum_of_arrays, static_argnums=position, in_shardings=(replicated,) * (count - 1), graph=graph)(
        *arguments
    )
    assert (result == expected).all(), expected_got(f"jit with static_argnums={position}", str(expected), str(result))


@pytest.mark.apis("vmap")
@pytest.mark.documented(None)
@given(given_axes=st.integers(1, 3), passed=st.integers(1, 3), graph=st.booleans())
def test_an_in_axes_tuple_of_another_length_than_the_arguments_acts_as_in_flax(
    nnx: Any, flax_nnx: Any, given_axes: int, passed: int, graph: bool
) -> None:
    """A tuple of another length is a ValueError naming both lengths in tree mode, and JAX's
    prefix error of a tuple of another length in graph mode."""

    def scenario(nnx: Any) -> Any:
        return nnx.vmap(lambda *xs: sum(xs), in_axes=(0,) * given_axes, graph=graph)(*[jnp.ones((2, 3))] * passed)

    if given_axes == passed:
        words: tuple[str, ...] = ()
    elif graph:
        words = ("different lengths of tuple",)
    else:
        words = (f"len(in_axes)={given_axes}", f"len(args)={passed}")
    assert_same(flax_nnx, nnx, scenario, mentions=words)


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's static_argnums and static_argnames")
@pytest.mark.parametrize("given_as", ["static_argnums, passed by keyword", "static_argnames, passed by position"])
@pytest.mark.parametrize("graph", [True, False], ids=["graph mode", "tree mode"])
def test_a_static_argument_is_static_however_it_is_passed(nnx: Any, flax_nnx: Any, given_as: str, graph: bool) -> None:
    """One of static_argnums and static_argnames names the other's parameter too (as
    jax.jit infers it from the signature), so a count used in Python stays static."""

    def scenario(nnx: Any) -> Any:
        def f(x: Any, count: int) -> Any:
            return x * sum(range(count))

        if given_as.startswith("static_argnums"):
            return nnx.jit(f, static_argnums=1, graph=graph)(jnp.ones(2), count=3)
        return nnx.jit(f, static_argnames="count", graph=graph)(jnp.ones(2), 3)  # a name of several letters

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert outcome.error is None, f"flax's jit takes a static argument given by {given_as}"


@pytest.mark.apis("jit")
@pytest.mark.documented("api transforms page: jit's donate_argnums and donate_argnames")
@pytest.mark.parametrize("given_as", ["donate_argnums, passed by keyword", "donate_argnames, passed by position"])
def test_a_donated_argument_is_donated_however_it_is_passed(nnx: Any, flax_nnx: Any, given_as: str) -> None:
    """One of donate_argnums and donate_argnames names the other's parameter too (as jax.jit
    infers it from the signature): the donated array is deleted after the call."""

    def scenario(nnx: Any) -> Any:
        def f(x: Any, addend: Any) -> Any:
            return x + addend

        x, y = jnp.ones(2), jnp.arange(2.0)
        if given_as.startswith("donate_argnums"):
            out = nnx.jit(f, donate_argnums=1)(x, addend=y)
        else:
            out = nnx.jit(f, donate_argnames="addend")(x, y)  # a name of several letters
        return out, x.is_deleted(), y.is_deleted()

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("grad", "value_and_grad")
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("passed", [0, 1], ids=["no argument", "one argument"])
def test_differentiating_with_respect_to_no_argument_is_refused_as_in_flax(
    nnx: Any, flax_nnx: Any, transform: str, passed: int
) -> None:
    """``argnums=()``: flax raises ValueError."""

    def scenario(n: Any) -> Any:
        return getattr(n, transform)(lambda *xs: jnp.sum(jnp.ones(2)), argnums=())(*[jnp.ones(2)] * passed)

    outcome = assert_same(flax_nnx, nnx, scenario)
    assert isinstance(outcome.error, ValueError), f"flax's {transform} refuses argnums=() with ValueError"
