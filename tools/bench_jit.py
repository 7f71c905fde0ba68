"""Per-call overhead of ``nnx.jit`` next to raw ``jax.jit`` over the split state.

A 100-layer MLP of ``Linear(4, 4)`` is called through ``nnx.jit`` in graph mode
and tree mode, for each importable implementation (``flax.nnx``,
``nnx_reference``), and through ``jax.jit`` over ``nnx.split``'s state; the
ratios to raw ``jax.jit`` are printed. Timings are medians of repeated calls in
one run (machines are shared and noisy: compare ratios, not absolute times).

    JAX_PLATFORMS=cpu python tools/bench_jit.py [--layers 100] [--calls 200]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
import types
import typing as tp

import jax
import jax.numpy as jnp


def _linear_type(nnx: types.ModuleType) -> type:
    """The implementation's ``Linear`` or, where it has none, a minimal one."""
    if hasattr(nnx, "Linear"):
        return lambda din, dout, rngs: nnx.Linear(din, dout, rngs=rngs)

    class Linear(nnx.Module):
        def __init__(self, din: int, dout: int, rngs: tp.Any):
            self.kernel = nnx.Param(jax.random.normal(rngs.params(), (din, dout)))
            self.bias = nnx.Param(jnp.zeros((dout,)))

        def __call__(self, x: jax.Array) -> jax.Array:
            return x @ self.kernel + self.bias

    return Linear


def _mlp(nnx: types.ModuleType, layers: int) -> tp.Any:
    linear = _linear_type(nnx)

    class MLP(nnx.Module):
        def __init__(self, rngs: tp.Any):
            self.layers = nnx.List([linear(4, 4, rngs) for _ in range(layers)])

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers:
                x = layer(x)
            return x

    return MLP(nnx.Rngs(0))


def _time_per_call(call: tp.Callable[[], tp.Any], calls: int) -> float:
    jax.block_until_ready(call())  # compile
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(call())
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench(name: str, layers: int, calls: int) -> dict[str, float]:
    """Median seconds per call for raw jax.jit, nnx.jit graph mode and tree mode."""
    nnx = importlib.import_module(name)
    model = _mlp(nnx, layers)
    x = jnp.ones((1, 4))

    graphdef, state = nnx.split(model)

    @jax.jit
    def raw(state: tp.Any, x: jax.Array) -> jax.Array:
        return nnx.merge(graphdef, state)(x)

    def forward(model: tp.Any, x: jax.Array) -> jax.Array:
        return model(x)

    graph_fn = nnx.jit(forward, graph=True, graph_updates=True)
    tree_fn = nnx.jit(forward, graph=False)
    return {
        "jax.jit": _time_per_call(lambda: raw(state, x), calls),
        "nnx.jit graph": _time_per_call(lambda: graph_fn(model, x), calls),
        "nnx.jit tree": _time_per_call(lambda: tree_fn(model, x), calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=100)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    for name in ("flax.nnx", "nnx_reference"):
        try:
            results = bench(name, args.layers, args.calls)
        except ImportError as error:
            print(f"{name}: not importable ({error})")
            continue
        base = results["jax.jit"]
        print(f"{name} ({args.layers} layers, median of {args.calls} calls)")
        for label, seconds in results.items():
            print(f"  {label:14s} {seconds * 1e6:9.1f} us   x{seconds / base:6.2f} of jax.jit")


if __name__ == "__main__":
    main()
