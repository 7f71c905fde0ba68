"""Differential tests of graph mode's aliasing check: a Variable that two inputs (or two
places of the output) of a transform reach with different prefixes (axes, shardings,
differentiated or not) is refused with flax's ValueError, listing each such Variable in
the order it was first reached, with the path and the prefix of each place as flax
writes them (without graph updates under the input's or the output's position:
``0/1/k``, ``0/a``; grad's prefixes ``True`` or ``False``); one reached with prefixes that
agree, or that differ only where flax compares nothing (donation, filters that select the
same Variables), is accepted with flax's result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("transforms")]


def _message(call: Callable[[], Any]) -> Any:
    """The aliasing error's message, else the call's result."""
    try:
        return call()
    except ValueError as error:
        return str(error)


def _loss(a: Any, *rest: Any, **kwargs: Any) -> Any:
    return sum(jnp.sum(v[...]) for v in jax.tree.leaves(a, is_leaf=lambda x: hasattr(x, "get_value")))


def _mesh() -> Any:
    return jax.make_mesh((1,), ("x",))


def _grad(n: Any, gu: bool, argnums: Any, *args: Any, **kwargs: Any) -> Any:
    return n.grad(_loss, argnums=argnums, graph=True, graph_updates=gu)(*args, **kwargs)


def _two_params_shared(n: Any, gu: bool) -> Any:
    first, second = n.Param(jnp.ones(2)), n.Param(jnp.ones(2))
    return _grad(n, gu, 0, n.Dict(lin=n.Dict(kernel=first, o=second)), n.Dict(a=second, b=first))


def _bare_variable(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    return _grad(n, gu, 0, shared, n.Dict(k=shared))


def _second_argument_differentiated(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    return _grad(n, gu, 1, n.Dict(p=shared), n.Dict(s=shared), n.Dict(t=shared))


def _keyword_argument(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    return _grad(n, gu, 0, n.Dict(p=shared), b=n.Dict(s=shared))


def _nested_containers(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    return _grad(n, gu, 0, [n.Dict(p=shared), 3], {"x": n.Dict(s=shared)})


def _batch_stat_in_a_differentiated_argument(n: Any, gu: bool) -> Any:
    shared = n.BatchStat(jnp.ones(2))
    return _grad(n, gu, 0, n.Dict(p=n.Param(jnp.ones(2)), s=shared), n.Dict(s=shared))


def _diff_state_filters(n: Any, gu: bool, first: Any, second: Any, shared_type: Any) -> Any:
    shared = shared_type(jnp.ones(2))
    argnums = (n.DiffState(0, first), n.DiffState(1, second)) if gu else (0, 1)
    return _grad(n, gu, argnums, n.Dict(p=n.Param(jnp.ones(1)), q=shared), n.Dict(s=shared))


def _vmap(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    return n.vmap(lambda a, b: None, in_axes=(0, None), graph=True, graph_updates=gu)(
        n.Dict(p=shared), [n.Dict(s=shared)]
    )


def _pmap(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones((1, 2)))
    return n.pmap(lambda a, b: None, in_axes=(0, None), graph=True, graph_updates=gu)(
        n.Dict(p=shared), [n.Dict(s=shared)]
    )


def _scan(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    scan = n.scan(lambda c, a, b: (c, None), in_axes=(n.Carry, 0, None), graph=True, graph_updates=gu)
    return scan(0, n.Dict(p=shared), [n.Dict(s=shared)])


def _shard_map(n: Any, gu: bool) -> Any:
    shared, P = n.Param(jnp.ones(2)), PartitionSpec
    shard_map = n.shard_map(
        lambda a, b: None, mesh=_mesh(), in_specs=(P("x"), P()), out_specs=P(), graph=True, graph_updates=gu
    )
    return shard_map(n.Dict(p=shared), [n.Dict(s=shared)])


def _jit_shardings(n: Any, gu: bool) -> Any:
    shared, mesh = n.Param(jnp.ones(2)), _mesh()
    shardings = (NamedSharding(mesh, PartitionSpec("x")), NamedSharding(mesh, PartitionSpec()))
    return n.jit(lambda a, b: None, in_shardings=shardings, graph=True, graph_updates=gu)(
        n.Dict(p=shared), [n.Dict(s=shared)]
    )


def _jit_donating_one_side(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    n.jit(lambda a, b: None, donate_argnums=(0,), graph=True, graph_updates=gu)(n.Dict(p=shared), [n.Dict(s=shared)])
    return "ran"


def _custom_vjp(n: Any, gu: bool) -> Any:
    shared = n.Param(jnp.ones(2))
    function = n.custom_vjp(_loss, nondiff_argnums=(1,), graph=True, graph_updates=gu)
    function.defvjp(lambda a, b: (_loss(a), None), lambda *residuals_and_g: residuals_and_g)
    return function(n.Dict(p=shared), n.Dict(s=shared))


def _held_twice(n: Any, x: Any) -> Any:
    """A new Param held by both entries of the output."""
    shared = n.Param(x)
    return n.Dict(a=shared), n.Dict(b=shared)


def _vmap_output(n: Any, gu: bool) -> Any:
    return n.vmap(lambda x: _held_twice(n, x), out_axes=(0, 1), graph=True, graph_updates=gu)(jnp.ones((2, 2)))


def _vmap_output_with_an_input(n: Any, gu: bool) -> Any:
    model = n.Dict(p=n.Param(jnp.ones((2, 3))))
    return n.vmap(lambda m: (m, m.p), in_axes=0, out_axes=(0, 1), graph=True, graph_updates=gu)(model)


def _pmap_output(n: Any, gu: bool) -> Any:
    return n.pmap(lambda x: _held_twice(n, x), out_axes=(0, 1), graph=True, graph_updates=gu)(jnp.ones((1, 2)))


def _scan_output(n: Any, gu: bool) -> Any:
    scan = n.scan(
        lambda c, x: (c, _held_twice(n, x)),
        in_axes=(n.Carry, 0),
        out_axes=(n.Carry, (0, 1)),
        graph=True,
        graph_updates=gu,
    )
    return scan(0, jnp.ones((2, 2)))


def _shard_map_output(n: Any, gu: bool) -> Any:
    P = PartitionSpec
    shard_map = n.shard_map(
        lambda x: _held_twice(n, x), mesh=_mesh(), in_specs=P(), out_specs=(P("x"), P()), graph=True, graph_updates=gu
    )
    return shard_map(jnp.ones((2, 2)))


def _jit_output(n: Any, gu: bool) -> Any:
    a, b = n.jit(lambda x: _held_twice(n, x), graph=True, graph_updates=gu)(jnp.ones((2, 2)))
    return a.a is b.b


CASES: dict[str, Callable[[Any, bool], Any]] = {
    "grad, two shared Params listed in the order first reached": _two_params_shared,
    "grad, a bare Variable argument": _bare_variable,
    "grad, argnums naming the second of three arguments": _second_argument_differentiated,
    "grad, a keyword argument": _keyword_argument,
    "grad, Dicts inside a list and a dict": _nested_containers,
    "grad, a BatchStat of a differentiated argument": _batch_stat_in_a_differentiated_argument,
    "grad, DiffState filters that select the same Param": lambda n, gu: _diff_state_filters(
        n, gu, n.Param, (n.Param,), n.Param
    ),
    "grad, a Variable neither DiffState filter selects": lambda n, gu: _diff_state_filters(
        n, gu, n.Param, n.BatchStat, n.Variable
    ),
    "grad, DiffState filters that disagree on the shared Variable": lambda n, gu: _diff_state_filters(
        n, gu, n.Param, n.BatchStat, n.BatchStat
    ),
    "vmap with axes 0 and None": _vmap,
    "pmap with axes 0 and None": _pmap,
    "scan with axes 0 and None": _scan,
    "shard_map with two specs": _shard_map,
    "jit with two in_shardings": _jit_shardings,
    "jit donating one of the two arguments": _jit_donating_one_side,
    "custom_vjp with a nondiff argument": _custom_vjp,
    "vmap's output holding a new Param twice under axes 0 and 1": _vmap_output,
    "vmap's output holding an input and its Param under axes 0 and 1": _vmap_output_with_an_input,
    "pmap's output holding a new Param twice under axes 0 and 1": _pmap_output,
    "scan's output holding a new Param twice under axes 0 and 1": _scan_output,
    "shard_map's output holding a new Param twice under two specs": _shard_map_output,
    "jit's output holding a new Param twice": _jit_output,
}


@pytest.mark.apis("grad", "DiffState", "vmap", "pmap", "scan", "shard_map", "jit", "custom_vjp")
@pytest.mark.parametrize("graph_updates", [True, False], ids=["with graph updates", "without graph updates"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_variable_reached_in_two_places_is_checked_and_reported_as_flax_does(
    nnx: Any, flax_nnx: Any, case: str, graph_updates: bool
) -> None:
    """The whole message where flax refuses the call (the lists and their order included),
    flax's result where it accepts it."""
    assert_same(flax_nnx, nnx, lambda n: _message(lambda: CASES[case](n, graph_updates)))
