"""The newest NNX Basics guide (newer than the pin), replayed cell by cell from its text.

The guide starts in tree mode (``set_graph_mode(False)``, ``set_graph_updates(False)``) and
asks for graph mode per call. Each test replays the cells it needs, in tree mode, and
checks what the guide shows. Where the guide shows what only a newer flax prints, the test
is marked ``newer_flax`` with the reason, and checks flax 0.12.12's behaviour instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

pytestmark = [pytest.mark.kind("property"), pytest.mark.documented("guide:nnx_basics (newer than the pin)")]

W = np.array(
    [
        [0.8423141, 0.18237865, 0.2271781, 0.12072563, 0.19181347],
        [0.722015, 0.7654456, 0.15254045, 0.9517063, 0.02931046],
    ],
    dtype=np.float32,
)
"""The guide's ``Linear(2, 5, rngs=nnx.Rngs(0)).w``."""

RNGS_REPR = """Rngs( # RngState: 2 (12 B)
  default=RngStream( # RngState: 2 (12 B)
    tag='default',
    key=RngKey( # 1 (8 B)
      value=Array((), dtype=key<fry>) overlaying:
      [0 0],
      tag='default'
    ),
    count=RngCount( # 1 (4 B)
      value=Array(3, dtype=uint32),
      tag='default'
    )
  )
)"""


@dataclasses.dataclass(frozen=True)
class Guide:
    """The guide's classes, defined on the implementation under test."""

    Count: type
    Linear: type
    MLP: type


def guide_classes(nnx: Any) -> Guide:
    class Count(nnx.Variable):  # type: ignore[misc]
        pass

    class Linear(nnx.Pytree):  # type: ignore[misc]
        def __init__(self, din: int, dout: int, *, rngs: Any) -> None:
            self.din, self.dout = din, dout
            self.w = nnx.Param(rngs.uniform((din, dout)))
            self.count = Count(jnp.array(0))

        def __call__(self, x: jax.Array) -> jax.Array:
            self.count[...] += 1
            return x @ self.w

    class MLP(nnx.Pytree):  # type: ignore[misc]
        def __init__(self, din: int, dmid: int, dout: int, *, rngs: Any) -> None:
            self.din, self.dmid, self.dout = din, dmid, dout
            self.linear1 = Linear(din, dmid, rngs=rngs)
            self.linear2 = Linear(dmid, dout, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            return self.linear2(nnx.relu(self.linear1(x)))

    return Guide(Count, Linear, MLP)


@pytest.fixture
def guide(nnx: Any) -> Iterator[Guide]:
    """The guide's first cells: tree mode, then its classes."""
    nnx.graphlib.set_graph_mode(False)
    nnx.graphlib.set_graph_updates(False)
    yield guide_classes(nnx)


@pytest.mark.apis("graphlib", "set_graph_mode", "set_graph_updates")
@pytest.mark.newer_flax(
    "the guide shows the setter's repr as `<flax.nnx.graphlib.set_graph_updates at 0x...>`; "
    "flax 0.12.12 prints `... object at 0x...>`, an address either way"
)
def test_the_first_cell_puts_the_guide_in_tree_mode(nnx: Any, guide: Guide) -> None:
    modes = nnx.set_graph_mode.current_value(), nnx.set_graph_updates.current_value()
    assert modes == (False, False), f"after the first cell graph mode and graph updates are off, not {modes}"


@pytest.mark.apis("Pytree", "Param", "Variable", "Rngs")
def test_a_pytree_layer_updates_its_count_in_place_and_maps_like_a_pytree(nnx: Any, guide: Guide) -> None:
    model = guide.Linear(2, 5, rngs=nnx.Rngs(0))
    y = model(jnp.ones((3, 2)))
    assert y.shape == (3, 5) and int(model.count[...]) == 1, f"y.shape = {y.shape}, model.count = {model.count[...]}"
    doubled = jax.tree.map(lambda x: x * 2, model)
    sums = f"{model.w.sum():.4f} {doubled.w.sum():.4f}"
    assert sums == "4.1854 8.3709", f"the guide's w sums are 4.1854 and 8.3709 (doubled), not {sums}"
    leaves = jax.tree.leaves_with_path(model)
    paths = [jax.tree_util.keystr(path) for path, _ in leaves]
    assert paths == [".count.value", ".w.value"], f"the guide's leaf paths are .count.value and .w.value, not {paths}"
    np.testing.assert_allclose(np.asarray(leaves[1][1]), W, rtol=1e-6, err_msg="the guide's w")


@pytest.mark.apis("Rngs")
def test_rngs_draw_the_guide_s_keys_and_samples_and_count_them(nnx: Any, guide: Guide) -> None:
    rngs = nnx.Rngs(0)
    key1, key2 = rngs(), rngs()
    arr = rngs.normal((2, 3))
    keys = [jax.random.key_data(key).tolist() for key in (key1, key2)]
    assert keys == [[1797259609, 2579123966], [928981903, 3453687069]], f"the guide's key1 and key2, not {keys}"
    expected = [[1.2956359, 1.3550105, -0.40960556], [-0.77188545, 0.38094172, 0.01888919]]
    np.testing.assert_allclose(np.asarray(arr), expected, rtol=1e-6, err_msg="the guide's normal sample")
    assert str(rngs) == RNGS_REPR, f"print(rngs) shows the guide's Rngs with count 3:\n{rngs}"


@pytest.mark.apis("Pytree", "relu")
def test_nested_pytrees_compose(nnx: Any, guide: Guide) -> None:
    y = guide.MLP(2, 16, 5, rngs=nnx.Rngs(0))(jnp.ones((3, 2)))
    assert y.shape == (3, 5), f"the guide's MLP gives y.shape = (3, 5), not {y.shape}"


@pytest.mark.apis("state", "update")
def test_raw_jax_jit_keeps_updates_inside_until_state_and_update_bring_them_out(nnx: Any, guide: Guide) -> None:
    x = jnp.ones((3, 2))
    model = guide.Linear(2, 5, rngs=nnx.Rngs(0))
    jax.jit(lambda model, x: model(x))(model, x)
    assert int(model.count[...]) == 0, f"a raw jax.jit does not update the model: count is {model.count[...]}"

    @jax.jit
    def forward(model: Any, x: jax.Array) -> Any:
        return model(x), nnx.state(model, guide.Count)

    _, updates = forward(model, x)
    nnx.update(model, updates)
    assert int(model.count[...]) == 1, (
        f"nnx.update with the returned Count state sets count to 1, not {model.count[...]}"
    )


def _raw_train_step(nnx: Any, guide: Guide) -> Any:
    @jax.jit
    def train_step(model: Any, optimizer: Any, x: jax.Array, y: jax.Array) -> Any:
        graphdef, params, nondiff = nnx.split(model, nnx.Param, ...)

        def loss_fn(params: Any, nondiff: Any) -> Any:
            model = nnx.merge(graphdef, params, nnx.clone(nondiff))
            return jnp.mean((model(x) - y) ** 2), nnx.state(model, guide.Count)

        grads, updates = jax.grad(loss_fn, has_aux=True)(params, nondiff)
        nnx.update(model, updates)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer))

    return train_step


def _nnx_train_step(nnx: Any, guide: Guide) -> Any:
    @nnx.jit
    def train_step(model: Any, optimizer: Any, x: jax.Array, y: jax.Array) -> None:
        graphdef, params, nondiff = nnx.split(model, nnx.Param, ...)
        grads = nnx.grad(lambda params, nondiff: jnp.mean((nnx.merge(graphdef, params, nondiff)(x) - y) ** 2))(
            params, nondiff
        )
        optimizer.update(model, grads)

    return train_step


@pytest.mark.apis("split", "merge", "clone", "state", "update", "Optimizer", "jit", "grad")
@pytest.mark.parametrize("step", ["raw_jax", "nnx_transforms"])
def test_a_training_step_counts_one_call_and_one_optimizer_step(nnx: Any, guide: Guide, step: str) -> None:
    x, y = jnp.ones((3, 2)), jnp.ones((3, 5))
    model = guide.Linear(2, 5, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    if step == "raw_jax":
        nnx.update((model, optimizer), _raw_train_step(nnx, guide)(model, optimizer, x, y))
    else:
        _nnx_train_step(nnx, guide)(model, optimizer, x, y)
    counts = int(model.count[...]), int(optimizer.step[...])
    assert counts == (1, 1), f"model.count and optimizer.step are 1 after one step, not {counts}"


def _forward(m: Any, x: jax.Array) -> Any:
    m.a[...] += 1.0
    return m.a * x + m.b


@pytest.mark.apis("dataclass", "Module", "jit")
@pytest.mark.newer_flax(
    "the guide's error reads 'Variable at [0][0].b was already seen at [0][0].a. tree-mode jit does not "
    "support shared Variable references' and its graph-mode call shows y = 6.0 and a = b = 3.0 (the "
    "cell run twice); flax 0.12.12 raises 'Duplicate Param ... found at paths .args[0].a, .args[0].b' "
    "and gives y = 4.0, a = b = 2.0"
)
def test_tree_mode_jit_refuses_a_shared_param_and_graph_true_accepts_it(nnx: Any, guide: Guide) -> None:
    @nnx.dataclass
    class Foo(nnx.Module):  # type: ignore[misc]
        a: Any
        b: Any

    p = nnx.Param(jnp.array(1.0))
    model = Foo(p, p)
    with pytest.raises(ValueError) as refused:
        nnx.jit(_forward)(model, jnp.array(1.0))
    assert ".a" in str(refused.value) and ".b" in str(refused.value), f"the error names both paths: {refused.value}"
    y = nnx.jit(_forward, graph=True)(model, jnp.array(1.0))
    shown = f"{y = !s}, {model.a[...] = !s}, {model.b[...] = !s}"
    assert shown == "y = 4.0, model.a[...] = 2.0, model.b[...] = 2.0", shown


@pytest.mark.apis("var_defaults", "Variable")
@pytest.mark.newer_flax(
    "the guide's hijax cells run a raw jax.jit train step that updates the hijax Count and print "
    "count 1 and step 1; flax 0.12.12 raises ImmutableVariableError there, as on the guide's "
    "last cell (which shows only its first print)"
)
def test_hijax_variables_print_as_hijax_and_a_raw_jit_may_not_update_them(nnx: Any, guide: Guide) -> None:
    with nnx.var_defaults(hijax=True):
        model = guide.Linear(2, 5, rngs=nnx.Rngs(0))
    shown = str(model)
    assert shown.count("hijax=True") == 2, f"print(model) shows both Variables with hijax=True:\n{shown}"
    v = nnx.Variable(jnp.array(1), hijax=True)

    @jax.jit
    def inc(v: Any) -> None:
        v[...] += 1

    with pytest.raises(Exception) as refused:
        inc(v)
    assert type(refused.value).__name__ == "ImmutableVariableError", (
        f"flax 0.12.12 raises ImmutableVariableError, not {refused.value!r}"
    )
    assert int(v[...]) == 1, f"the refused update leaves v at 1, not {v[...]}"
