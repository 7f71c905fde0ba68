"""Overhead of NNX next to raw ``jax.jit``: both implementations and Equinox, one interleaved run.

Every timed case is a call of no arguments, timed until everything it returns is
ready (a call that updates a model returns the model too, so that the writes it left
running are not charged to the next case); each round calls every case in turn
(twice, timing the second call: see :func:`medians_interleaved`), so that a slow
spell of a shared machine falls on every case alike, and the median over the rounds
is kept. Every figure is a ratio to the median of one unit case, the floor: ``jax.jit``
of a pure-JAX MLP of 100 ``x @ kernel + bias`` layers (4 x 4) over a list of dicts of
arrays. A per-call figure shows in brackets its ratio to the library's own ``jax.jit``
over its split state (or Equinox's partitioned arrays). Cases:

* per call: the same 100-layer MLP as ``nnx.Linear`` layers through ``jax.jit``
  over ``nnx.split``'s state, ``nnx.jit`` in graph mode (with graph updates, the
  default) and in tree mode, and ``nnx.cached_partial`` of the graph-mode one with the
  model bound; as ``eqx.nn.Linear`` layers through ``jax.jit`` over
  ``eqx.partition``'s arrays and through ``eqx.filter_jit``; every call on the same,
  unchanged model (a training loop's steady state);
* call patterns of real programs, in graph and tree mode: two and three models of one
  structure alternating through one jitted function, a Variable's value changed before
  each call, an attribute re-set before each call, ``train()``/``eval()`` between calls,
  the model inside a list or a dict argument;
  beside each, its plain-JAX counterpart (graph mode's returns every parameter too);
* ``split``, ``merge``, ``state``, ``update`` and ``clone`` at 10, 100 and 1000
  layers, and each one's growth from 10 to 1000 layers (100 when linear);
* an ``nnx.Optimizer`` (adam) step under ``nnx.jit`` on a small MLP;
* ``nnx.scan`` over 12 stacked layers: a call, and how often the body is traced per call.

    JAX_PLATFORMS=cpu python tools/bench.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import itertools
import statistics
import time
import types
import typing as tp

import jax
import jax.numpy as jnp

NNX = ("flax.nnx", "nnx_reference")
EQUINOX = "equinox"
JAX = "jax"
"""The plain-JAX column: each call pattern's counterpart over a list of dicts of arrays."""
COLUMNS = (JAX, *NNX, EQUINOX)
WIDTH = 4
"""Features of every Linear layer of the per-call and graph-operation models."""
LAYERS = 100
OP_SIZES = (10, 100, 1000)
OPS = ("split", "merge", "state", "update", "clone")
SCAN_LAYERS = 12

Call = tp.Callable[[], tp.Any]


class Row(tp.NamedTuple):
    """One line of the table: its section and its label."""

    section: str
    label: str


class Cases:
    """The timed cases, by row and column, and the figures that are not times (counts)."""

    def __init__(self) -> None:
        self.calls: dict[tuple[Row, str], Call] = {}
        self.counts: dict[tuple[Row, str], float] = {}
        self.rows: list[Row] = []

    def add(self, row: Row, column: str, call: Call) -> None:
        self._row(row)
        self.calls[row, column] = call

    def count(self, row: Row, column: str, value: float) -> None:
        self._row(row)
        self.counts[row, column] = value

    def derived(self, row: Row) -> None:
        """A row of figures computed from other rows (see :func:`figures`)."""
        self._row(row)

    def _row(self, row: Row) -> None:
        if row not in self.rows:
            self.rows.append(row)


UNIT = Row("unit", "jax.jit, pure JAX, 100 layers")
PER_CALL = f"per call, {LAYERS} x Linear({WIDTH}, {WIDTH})"
RAW = Row(PER_CALL, "jax.jit over the split state")
GRAPH = Row(PER_CALL, "nnx.jit, graph mode")
TREE = Row(PER_CALL, "nnx.jit, tree mode")
FILTER_JIT = Row(PER_CALL, "eqx.filter_jit")
CACHED = Row(PER_CALL, "nnx.cached_partial of the graph-mode nnx.jit")
PATTERNS = f"call patterns, {LAYERS} x Linear({WIDTH}, {WIDTH}) per call"
MODES = {"graph mode": {"graph": True, "graph_updates": True}, "tree mode": {"graph": False}}
OPTIMIZER = Row("training", "Optimizer(adam) step under nnx.jit, 3 x Linear(32, 32)")
SCAN_CALL = Row("scan", f"nnx.scan over {SCAN_LAYERS} layers, per call")
SCAN_TRACES = Row("scan", f"nnx.scan over {SCAN_LAYERS} layers: body traces per call (a count)")


def op_row(op: str, layers: int) -> Row:
    return Row("graph operations", f"{op}, {layers} layers")


def growth_row(op: str) -> Row:
    return Row("graph operations", f"{op}: {OP_SIZES[-1]} / {OP_SIZES[0]} layers (a ratio; linear: 100)")


Params = list[dict[str, jax.Array]]


def _params(seed: int) -> Params:
    keys = jax.random.split(jax.random.key(seed), LAYERS)
    return [{"kernel": jax.random.normal(k, (WIDTH, WIDTH)), "bias": jnp.zeros(WIDTH)} for k in keys]


def _forward(params: Params, x: jax.Array) -> jax.Array:
    for layer in params:
        x = x @ layer["kernel"] + layer["bias"]
    return x


def _pure_jax(cases: Cases) -> None:
    """The unit: ``jax.jit`` of the pure-JAX MLP."""
    params = _params(0)
    x = jnp.ones((1, WIDTH))
    forward = jax.jit(_forward)
    cases.add(UNIT, JAX, lambda: forward(params, x))


def _pure_jax_patterns(cases: Cases) -> None:
    """The plain-JAX counterparts of the call patterns: in graph mode the function also
    returns every parameter (graph updates give every Variable a new array, as flax's do),
    which is the least a graph-mode call can cost."""
    sets = [_params(seed) for seed in range(3)]
    params = sets[0]
    x = jnp.ones((1, WIDTH))
    kernels = itertools.cycle([params[0]["kernel"] + 1, params[0]["kernel"]])
    for mode, returns_params in (("graph mode", True), ("tree mode", False)):
        jitted = jax.jit((lambda p, x: (_forward(p, x), p)) if returns_params else _forward)

        def row(label: str, mode: str = mode) -> Row:
            return Row(PATTERNS, f"{label}, {mode}")

        cases.add(row("the same model"), JAX, functools.partial(jitted, params, x))
        for count, label in ((2, "two models alternating"), (3, "three models alternating")):
            cases.add(row(label), JAX, Alternating([functools.partial(jitted, p, x) for p in sets[:count]]))

        def value_changed(jitted: tp.Any = jitted) -> tp.Any:
            params[0]["kernel"] = next(kernels)
            return jitted(params, x)

        cases.add(row("a Variable's value changed before each call"), JAX, value_changed)


def _mlp(nnx: types.ModuleType, layers: int, width: int = WIDTH) -> tp.Any:
    class MLP(nnx.Module):
        def __init__(self, rngs: tp.Any):
            self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(layers)])

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers:
                x = layer(x)
            return x

    return MLP(nnx.Rngs(0))


def _per_call(cases: Cases, name: str, nnx: types.ModuleType) -> None:
    model = _mlp(nnx, LAYERS)
    x = jnp.ones((1, WIDTH))
    graphdef, state = nnx.split(model)

    @jax.jit
    def raw(state: tp.Any, x: jax.Array) -> jax.Array:
        return nnx.merge(graphdef, state)(x)

    def forward(model: tp.Any, x: jax.Array) -> jax.Array:
        return model(x)

    graph_fn = nnx.jit(forward, graph=True, graph_updates=True)
    tree_fn = nnx.jit(forward, graph=False)
    cases.add(RAW, name, lambda: raw(state, x))
    cases.add(GRAPH, name, lambda: graph_fn(model, x))
    cases.add(TREE, name, lambda: tree_fn(model, x))
    cached_fn = nnx.cached_partial(nnx.jit(forward, graph=True, graph_updates=True), model)  # a jit of its own
    cases.add(CACHED, name, lambda: cached_fn(x))


class Alternating:
    """One call of ``calls`` in turn at each call, as a loop over several models makes them.
    Its warm-up calls each once, so that the timed call's model was last called as many
    calls before as in such a loop (not a whole round of the other cases before)."""

    def __init__(self, calls: list[Call]) -> None:
        self.calls = calls
        self.turns = itertools.cycle(calls)

    def __call__(self) -> tp.Any:
        return next(self.turns)()

    def warm_up(self) -> list[tp.Any]:
        return [self() for _ in self.calls]


def _warm_up(call: Call) -> tp.Any:
    """The untimed call before a case's timed one (a whole turn of an :class:`Alternating` case)."""
    return call.warm_up() if isinstance(call, Alternating) else call()


def _patterns(cases: Cases, name: str, nnx: types.ModuleType) -> None:
    """The call patterns of real programs, through one jitted function per mode and pattern."""
    models = [_mlp(nnx, LAYERS) for _ in range(3)]
    model = models[0]
    x = jnp.ones((1, WIDTH))
    kernel = model.layers[0].kernel
    values = itertools.cycle([kernel[...] + 1, kernel[...]])

    def forward(model: tp.Any, x: jax.Array) -> jax.Array:
        return model(x)

    def forward_in(container: tp.Any, x: jax.Array) -> jax.Array:
        return (container[0] if isinstance(container, list) else container["model"])(x)

    for mode, options in MODES.items():

        def fn(options: dict[str, tp.Any] = options) -> tp.Any:
            return nnx.jit(forward, **options)  # a jitted function of its own per pattern

        def row(label: str, mode: str = mode) -> Row:
            return Row(PATTERNS, f"{label}, {mode}")

        cases.add(row("the same model"), name, functools.partial(fn(), model, x))
        for count, label in ((2, "two models alternating"), (3, "three models alternating")):
            jitted = fn()
            cases.add(row(label), name, Alternating([functools.partial(jitted, m, x) for m in models[:count]]))
        jitted_value = fn()

        def value_changed(jitted: tp.Any = jitted_value) -> tp.Any:
            kernel[...] = next(values)
            return jitted(model, x)

        cases.add(row("a Variable's value changed before each call"), name, value_changed)
        jitted_reset = fn()

        def attribute_reset(jitted: tp.Any = jitted_reset) -> tp.Any:
            model.layers = model.layers
            return jitted(model, x)

        cases.add(row("an attribute re-set before each call"), name, attribute_reset)
        jitted_toggled = fn()
        toggles = itertools.cycle([model.train, model.eval])

        def toggled(jitted: tp.Any = jitted_toggled, toggles: tp.Any = toggles) -> tp.Any:
            next(toggles)()
            return jitted(model, x)

        cases.add(row("train() or eval() before each call"), name, toggled)
        jitted_in = nnx.jit(forward_in, **options)
        cases.add(row("the model inside a list argument"), name, functools.partial(jitted_in, [model], x))
        cases.add(row("the model inside a dict argument"), name, functools.partial(jitted_in, {"model": model}, x))


def _graph_ops(cases: Cases, name: str, nnx: types.ModuleType) -> None:
    for layers in OP_SIZES:
        model = _mlp(nnx, layers)
        graphdef, state = nnx.split(model)
        calls: dict[str, Call] = {
            "split": lambda model=model: nnx.split(model),
            "merge": lambda graphdef=graphdef, state=state: nnx.merge(graphdef, state),
            "state": lambda model=model: nnx.state(model),
            "update": lambda model=model, state=state: nnx.update(model, state),
            "clone": lambda model=model: nnx.clone(model),
        }
        for op in OPS:
            cases.add(op_row(op, layers), name, calls[op])


def _optimizer(cases: Cases, name: str, nnx: types.ModuleType) -> None:
    import optax

    model = _mlp(nnx, 3, width=32)
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    x = jnp.ones((8, 32))

    @nnx.jit
    def step(model: tp.Any, optimizer: tp.Any, x: jax.Array) -> jax.Array:
        def loss(model: tp.Any) -> jax.Array:
            return jnp.mean(model(x) ** 2)

        value, grads = nnx.value_and_grad(loss)(model)
        optimizer.update(model, grads)
        return value

    cases.add(OPTIMIZER, name, lambda: (step(model, optimizer, x), model, optimizer))


def _scan(cases: Cases, name: str, nnx: types.ModuleType) -> None:
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(key: jax.Array) -> tp.Any:
        return nnx.Linear(WIDTH, WIDTH, rngs=nnx.Rngs(key))

    layers = create(jax.random.split(jax.random.key(0), SCAN_LAYERS))
    traces: list[int] = []

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(x: jax.Array, layer: tp.Any) -> jax.Array:
        traces.append(1)
        return layer(x)

    x = jnp.ones((1, WIDTH))
    calls = 5
    jax.block_until_ready(forward(x, layers))
    traces.clear()
    for _ in range(calls):
        jax.block_until_ready(forward(x, layers))
    cases.count(SCAN_TRACES, name, len(traces) / calls)
    cases.add(SCAN_CALL, name, lambda: (forward(x, layers), layers))


def _equinox(cases: Cases) -> None:
    import equinox as eqx

    class MLP(eqx.Module):
        layers: list[eqx.nn.Linear]

        def __init__(self, key: jax.Array):
            self.layers = [eqx.nn.Linear(WIDTH, WIDTH, key=k) for k in jax.random.split(key, LAYERS)]

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers:
                x = layer(x)
            return x

    model = MLP(jax.random.key(0))
    x = jnp.ones(WIDTH)
    params, static = eqx.partition(model, eqx.is_array)

    @jax.jit
    def raw(params: tp.Any, x: jax.Array) -> jax.Array:
        return eqx.combine(params, static)(x)

    @eqx.filter_jit
    def forward(model: MLP, x: jax.Array) -> jax.Array:
        return model(x)

    cases.add(RAW, EQUINOX, lambda: raw(params, x))
    cases.add(FILTER_JIT, EQUINOX, lambda: forward(model, x))


def collect() -> tuple[Cases, list[str]]:
    """Every case of every importable library; the notes say which were not importable."""
    cases = Cases()
    notes: list[str] = []
    _pure_jax(cases)
    for name in NNX:
        try:
            nnx = importlib.import_module(name)
        except ImportError as error:
            notes.append(f"{name}: not importable ({error})")
            continue
        for add in (_per_call, _patterns, _graph_ops, _optimizer, _scan):
            add(cases, name, nnx)
    _pure_jax_patterns(cases)
    try:
        _equinox(cases)
    except ImportError as error:
        notes.append(f"{EQUINOX}: not importable ({error})")
    for row in map(growth_row, OPS):
        cases.derived(row)
    return cases, notes


def medians_interleaved(calls: dict[tuple[Row, str], Call], rounds: int) -> dict[tuple[Row, str], float]:
    """Median seconds per call of each case, every case called once per round, in turn.

    The garbage collector runs between rounds, not while a case is timed: the large
    graphs would otherwise make it charge the same cases with long pauses every round.
    Each round starts one case further on, so that no case is always the first after
    a collection, and calls each case twice, timing the second call: the first call
    after a case that handled a large graph is slowed by its aftermath (in JAX's
    dispatch, whichever the case), and what is measured is a call in steady state (for
    models called in turn, the warm-up is a whole turn: see :class:`Alternating`).
    """
    for call in calls.values():
        jax.block_until_ready(call())  # compile
    samples: dict[tuple[Row, str], list[float]] = {key: [] for key in calls}
    order = list(calls.items())
    gc.disable()
    try:
        for round_ in range(rounds):
            shift = round_ % len(order)
            for key, call in order[shift:] + order[:shift]:
                jax.block_until_ready(_warm_up(call))  # the first call after another case pays for its aftermath
                start = time.perf_counter()
                jax.block_until_ready(call())
                samples[key].append(time.perf_counter() - start)
            gc.collect()
    finally:
        gc.enable()
    return {key: statistics.median(times) for key, times in samples.items()}


def figures(cases: Cases, medians: dict[tuple[Row, str], float]) -> dict[tuple[Row, str], float]:
    """Each cell's figure: a median over the unit's, a derived ratio, or a count."""
    unit = medians[UNIT, JAX]
    out = {key: seconds / unit for key, seconds in medians.items()}
    for name in COLUMNS:
        for op in OPS:
            first, last = (medians.get((op_row(op, n), name)) for n in (OP_SIZES[0], OP_SIZES[-1]))
            if first is not None and last is not None:
                out[growth_row(op), name] = last / first
    out.update(cases.counts)
    return out


def over_raw(medians: dict[tuple[Row, str], float]) -> dict[tuple[Row, str], float]:
    """Each per-call figure as a ratio to its library's own ``jax.jit`` over its split state."""
    return {
        (row, name): seconds / medians[RAW, name]
        for (row, name), seconds in medians.items()
        if row.section in (PER_CALL, PATTERNS) and row != RAW and (RAW, name) in medians
    }


def _shown(value: float | None, raw: float | None) -> str:
    if value is None:
        return ""
    shown = f"{value:.3g}" if value < 10 else f"{value:.0f}"
    return shown if raw is None else f"{shown} ({raw:.3g})"


def table(cases: Cases, cells: dict[tuple[Row, str], float], raw: dict[tuple[Row, str], float]) -> str:
    """The Markdown table: one line per row, one column per library; ``raw`` figures in brackets."""
    lines = [f"| | {' | '.join(COLUMNS)} |", f"| --- |{' ---: |' * len(COLUMNS)}"]
    sections = list(dict.fromkeys(row.section for row in cases.rows if row != UNIT))
    for section in sections:
        lines.append(f"| **{section}** |{' |' * len(COLUMNS)}")
        for row in (row for row in cases.rows if row.section == section):
            shown = [_shown(cells.get((row, name)), raw.get((row, name))) for name in COLUMNS]
            lines.append(f"| {row.label} | {' | '.join(shown)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    cases, notes = collect()
    medians = medians_interleaved(cases.calls, args.rounds)
    for note in notes:
        print(note)
    print(f"Ratios to jax.jit of a pure-JAX {LAYERS}-layer MLP (median of {args.rounds} interleaved rounds)")
    print(f"on {jax.devices()[0].platform}; in brackets, to the library's own jax.jit over its split state:\n")
    print(table(cases, figures(cases, medians), over_raw(medians)))


if __name__ == "__main__":
    main()
