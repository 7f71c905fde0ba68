"""Differential tests of how treescope renders Variables, Pytrees and Modules: the text
``treescope.render_to_text`` gives (the one flax.nnx's ``display`` shows in a notebook),
with its first-line comment of sizes by Variable type, the attributes it lists and
leaves out, and a Module met again (shared, or a cycle) — character for character as
flax's, with the implementation's module path read as flax.nnx."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import pytest
import treescope

from nnx_conformance.outputs import DocOutputChecker
from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("display"), pytest.mark.documented(None)]


def _shown(nnx: Any, value: Any) -> str:
    return DocOutputChecker(nnx.__name__).normalize(treescope.render_to_text(value))


VARIABLES: dict[str, Callable[[Any], Any]] = {
    "a Param": lambda nnx: nnx.Param(jnp.ones(2)),
    "a Param with metadata": lambda nnx: nnx.Param(jnp.ones((2, 3)), tag="t", eager_sharding=False),
    "a ref Param": lambda nnx: nnx.Param(jnp.ones(2), ref=True),
    "a hijax Param": lambda nnx: nnx.Param(jnp.ones(2), hijax=True),
    "a Variable of a string": lambda nnx: nnx.Variable("text"),
    "a Variable of a dict": lambda nnx: nnx.Variable({"a": jnp.ones(2), "b": 1}),
    "a BatchStat read through a hook": lambda nnx: nnx.BatchStat(jnp.ones(3), on_get_value=_doubled),
}


def _doubled(variable: Any, value: Any) -> Any:
    """An ``on_get_value`` hook (a module-level function: its rendering is the same in both runs)."""
    return value * 2


@pytest.mark.apis("Variable", "Param", "BatchStat")
@pytest.mark.parametrize("variable", VARIABLES)
def test_treescope_renders_a_variable_as_flax_s(nnx: Any, flax_nnx: Any, variable: str) -> None:
    """The value as read, its size in the first line's comment, and the metadata that is
    not at its default."""
    assert_same(flax_nnx, nnx, lambda nnx: _shown(nnx, VARIABLES[variable](nnx)))


def _two_kinds(nnx: Any) -> Any:
    class TwoKinds(nnx.Module):
        def __init__(self) -> None:
            self.weight = nnx.Param(jnp.ones((2, 2)))
            self.mean = nnx.BatchStat(jnp.zeros(2))
            self.count = 3
            self._hidden = "private"
            self._stat = nnx.data(nnx.BatchStat(jnp.ones(1)))

    return TwoKinds()


def _shared(nnx: Any) -> Any:
    inner = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    return nnx.Dict(first=inner, second=inner, param=inner.kernel)


def _cycle(nnx: Any) -> Any:
    class Node(nnx.Module):
        def __init__(self) -> None:
            self.value = nnx.Param(jnp.ones(1))
            self.me = nnx.List([])

    node = Node()
    node.me.append(node)
    return node


def _plain_pytree(nnx: Any) -> Any:
    class Point(nnx.Pytree):
        def __init__(self) -> None:
            self.x = jnp.ones(2)
            self.name = "p"

    return Point()


def _empty(nnx: Any) -> Any:
    class Empty(nnx.Module):
        def __init__(self) -> None:
            self.note = "nothing to count"

    return Empty()


NODES: dict[str, Callable[[Any], Any]] = {
    "a Linear": lambda nnx: nnx.Linear(2, 3, rngs=nnx.Rngs(0)),
    "a Module of two Variable types and private attributes": _two_kinds,
    "a Dict sharing a Linear and its kernel": _shared,
    "a Module in a cycle": _cycle,
    "a Pytree that is no Module": _plain_pytree,
    "a Module without Variables": _empty,
    "a Sequential": lambda nnx: nnx.Sequential(nnx.Linear(1, 2, rngs=nnx.Rngs(0)), nnx.BatchNorm(2, rngs=nnx.Rngs(0))),
    "Rngs": lambda nnx: nnx.Rngs(0, params=1),
}


@pytest.mark.apis("Module", "Pytree", "Linear", "Dict", "List", "Sequential", "BatchNorm", "Rngs")
@pytest.mark.parametrize("node", NODES)
def test_treescope_renders_a_pytree_as_flax_s(nnx: Any, flax_nnx: Any, node: str) -> None:
    """The sizes of its Variables by type (and their total) in the first line's comment,
    its attributes but the private ones that are not data, and a node met again as flax
    shows it."""
    assert_same(flax_nnx, nnx, lambda nnx: _shown(nnx, NODES[node](nnx)))
