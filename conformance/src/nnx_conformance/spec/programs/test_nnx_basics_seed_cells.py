"""The newest NNX Basics guide (the seed page, newer than the pin), its code cells run one
after another on the implementation and on flax.nnx beside it: each cell must print what
flax 0.12.12's prints (object reprs included, addresses masked) and raise what it raises.

The page's own outputs come from a newer flax; flax 0.12.12 is the yardstick here (it
raises ImmutableVariableError in the Hijax cells, for one). The cells are the page's code,
its indentation restored; they run as a notebook kernel runs them (``cells.run_cell``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nnx_conformance.cells import run_cell
from nnx_conformance.docsuite import ExampleRun
from nnx_conformance.impl import FLAX_NNX
from nnx_conformance.outputs import DocOutputChecker
from nnx_conformance.testing.assertions import expected_got

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented("guide:nnx_basics (newer than the pin)")]

CELLS = (
    """\
from flax import nnx
import jax
import jax.numpy as jnp
nnx.graphlib.set_graph_mode(False)
nnx.graphlib.set_graph_updates(False)
""",
    """\
class Count(nnx.Variable): pass

class Linear(nnx.Pytree):
  def __init__(self, din: int, dout: int, *, rngs: nnx.Rngs):
    self.din, self.dout = din, dout
    self.w = nnx.Param(rngs.uniform((din, dout)))
    self.count = Count(jnp.array(0))

  def __call__(self, x: jax.Array):
    self.count[...] += 1
    return x @ self.w

model = Linear(2, 5, rngs=nnx.Rngs(0))
nnx.display(model)
""",
    """\
x = jnp.ones((3, 2))
y = model(x)
print(f'{y.shape = }, {model.count[...] = }')
doubled_model = jax.tree.map(lambda x: x * 2, model)
print(f'\\nmodel.w sum: {model.w.sum():.4f}')
print(f'doubled.w sum: {doubled_model.w.sum():.4f}')
print('\\nPytree leaves:')
for path, value in jax.tree.leaves_with_path(model):
  print(f'{jax.tree_util.keystr(path)}: {value!r}')
""",
    """\
rngs = nnx.Rngs(0)
key1 = rngs()
key2 = rngs()
arr = rngs.normal((2, 3))
print(f'{key1 = }')
print(f'{key2 = }')
print(f'{arr = }')
print(rngs)
""",
    """\
class MLP(nnx.Pytree):
  def __init__(self, din: int, dmid: int, dout: int, *, rngs: nnx.Rngs):
    self.din, self.dmid, self.dout = din, dmid, dout
    self.linear1 = Linear(din, dmid, rngs=rngs)
    self.linear2 = Linear(dmid, dout, rngs=rngs)

  def __call__(self, x: jax.Array):
    x = nnx.relu(self.linear1(x))
    return self.linear2(x)

mlp = MLP(2, 16, 5, rngs=nnx.Rngs(0))
y = mlp(jnp.ones((3, 2)))
print(f'{y.shape = }')
nnx.display(mlp)
""",
    """\
model = Linear(2, 5, rngs=nnx.Rngs(0))

@jax.jit
def forward(model, x):
  y = model(x)
  return y

y = forward(model, x)
print(model.count[...])
""",
    """\
model = Linear(2, 5, rngs=nnx.Rngs(0))

@jax.jit
def forward(model, x):
  y = model(x)
  return y, nnx.state(model, Count)

y, updates = forward(model, x)
nnx.update(model, updates)
print(model.count[...])
""",
    """\
import optax

x, y = jnp.ones((3, 2)), jnp.ones((3, 5))
model = Linear(2, 5, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

@jax.jit
def train_step(model, optimizer, x, y):
  graphdef, params, nondiff = nnx.split(model, nnx.Param, ...)
  def loss_fn(params, nondiff):
    nondiff = nnx.clone(nondiff)
    model = nnx.merge(graphdef, params, nondiff)
    loss = jnp.mean((model(x) - y) ** 2)
    return loss, nnx.state(model, Count)
  grads, updates = jax.grad(loss_fn, has_aux=True)(params, nondiff)
  nnx.update(model, updates)
  optimizer.update(model, grads)
  return nnx.state((model, optimizer))

updates = train_step(model, optimizer, x, y)
nnx.update((model, optimizer), updates)
print(f'{model.count[...] = }')
print(f'{optimizer.step[...] = }')
""",
    """\
x, y = jnp.ones((3, 2)), jnp.ones((3, 5))
model = Linear(2, 5, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

@nnx.jit
def train_step(model, optimizer, x, y):
  graphdef, params, nondiff = nnx.split(model, nnx.Param, ...)
  def loss_fn(params, nondiff):
    model = nnx.merge(graphdef, params, nondiff)
    loss = jnp.mean((model(x) - y) ** 2)
    return loss
  grads = nnx.grad(loss_fn)(params, nondiff)
  optimizer.update(model, grads)

train_step(model, optimizer, x, y)
print(f'{model.count[...] = }')
print(f'{optimizer.step[...] = }')
""",
    """\
@nnx.dataclass
class Foo(nnx.Module):
  a: nnx.Param
  b: nnx.Param

p = nnx.Param(jnp.array(1.0))
model = Foo(p, p)

@nnx.jit
def forward(model, x):
  model.a[...] += 1.0
  return model.a * x + model.b

try:
  forward(model, jnp.array(1.0))
except ValueError as e:
  print(f'Error: {e}')
""",
    """\
@nnx.jit(graph=True)
def forward(model, x):
  model.a[...] += 1.0
  return model.a * x + model.b

y = forward(model, jnp.array(1.0))
print(f'{y = !s}, {model.a[...] = !s}, {model.b[...] = !s}')
""",
    """\
with nnx.var_defaults(hijax=True):
  x, y = jnp.ones((3, 2)), jnp.ones((3, 5))
  model = Linear(2, 5, rngs=nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
  print(model)

@jax.jit
def train_step(model, optimizer, x, y):
  graphdef, params, nondiff = nnx.split(model, nnx.Param, ...)
  def loss_fn(params):
    model = nnx.merge(graphdef, params, nondiff)
    loss = jnp.mean((model(x) - y) ** 2)
    return loss
  grads = jax.grad(loss_fn)(nnx.vars_as(params, hijax=False))
  optimizer.update(model, grads)

train_step(model, optimizer, x, y)
print(f'{model.count[...] = }')
print(f'{optimizer.step[...] = }')
""",
    """\
v = nnx.Variable(jnp.array(1), hijax=True)

@jax.jit
def inc(v):
  v[...] += 1

print(f'{v[...] = !s}')
inc(v)
print(f'{v[...] = !s}')
""",
)
"""The page's code cells in order; the first one's last line is an expression, shown."""


def run_cells(impl_name: str) -> list[ExampleRun]:
    """Every cell in one ``__main__`` namespace, each run whatever the ones before it did."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    normalise = DocOutputChecker(impl_name).normalize
    runs = []
    for number, source in enumerate(CELLS):
        raised = None
        try:
            printed = run_cell(source, namespace, f"<nnx_basics seed page: cell {number}>")
        except Exception as error:  # noqa: BLE001 - the exception's class is part of what the cell did
            printed, raised = "", type(error).__name__
        runs.append(ExampleRun(f"cell {number}", normalise(printed), raised))
    return runs


@pytest.fixture
def modes_kept(nnx: Any, flax_nnx: Any) -> Iterator[None]:
    """The page sets graph mode and graph updates off, for good: each side gets its own back."""
    with flax_nnx.active() as flax:
        kept = [
            (module, module.set_graph_mode.current_value(), module.set_graph_updates.current_value())
            for module in (nnx, flax)
        ]
    yield
    with flax_nnx.active():
        for module, graph, updates in kept:
            module.graphlib.set_graph_mode(graph)
            module.graphlib.set_graph_updates(updates)


@pytest.mark.apis(
    "set_graph_mode", "set_graph_updates", "Pytree", "Rngs", "Optimizer", "jit", "var_defaults", "vars_as"
)
def test_every_cell_of_the_newest_nnx_basics_guide_prints_and_raises_as_flax(
    nnx: Any, flax_nnx: Any, modes_kept: None
) -> None:
    with flax_nnx.active():
        expected = run_cells(FLAX_NNX)
    actual = run_cells(nnx.__name__)
    differences = [
        expected_got(f"{want.id} printed and raised", want.shown, got.shown)
        for want, got in zip(expected, actual)
        if want != got
    ]
    assert not differences, f"{len(differences)} of the {len(CELLS)} cells differ from flax's:\n" + "\n".join(
        differences
    )
