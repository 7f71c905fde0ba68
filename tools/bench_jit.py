"""Per-call overhead of ``nnx.jit`` next to raw ``jax.jit`` over the split state.

A 100-layer MLP of ``Linear(4, 4)`` is called through ``nnx.jit`` in graph mode
and tree mode, for each importable implementation (``flax.nnx``,
``nnx_reference``), and through ``jax.jit`` over ``nnx.split``'s state; the
ratios to raw ``jax.jit`` are printed. Timings are medians of repeated calls in
one run, every variant of both implementations called in turn in each round
(machines are shared and noisy: compare ratios, not absolute times).

    JAX_PLATFORMS=cpu python -m tools.bench_jit [--layers 100] [--calls 200]
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


def _mlp(nnx: types.ModuleType, layers: int) -> tp.Any:
    class MLP(nnx.Module):
        def __init__(self, rngs: tp.Any):
            self.layers = nnx.List([nnx.Linear(4, 4, rngs=rngs) for _ in range(layers)])

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers:
                x = layer(x)
            return x

    return MLP(nnx.Rngs(0))


def _medians_interleaved(calls: dict[str, tp.Callable[[], tp.Any]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each callable, timed in turn, one call each per round,
    so that a slow spell of a shared machine falls on every variant alike."""
    for call in calls.values():
        jax.block_until_ready(call())  # compile
    samples: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(rounds):
        for label, call in calls.items():
            start = time.perf_counter()
            jax.block_until_ready(call())
            samples[label].append(time.perf_counter() - start)
    return {label: statistics.median(times) for label, times in samples.items()}


def variants(name: str, layers: int) -> dict[str, tp.Callable[[], tp.Any]]:
    """Raw jax.jit, nnx.jit graph mode and tree mode, each a call of no arguments."""
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
        "jax.jit": lambda: raw(state, x),
        "nnx.jit graph": lambda: graph_fn(model, x),
        "nnx.jit tree": lambda: tree_fn(model, x),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=100)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    calls: dict[tuple[str, str], tp.Callable[[], tp.Any]] = {}
    for name in ("flax.nnx", "nnx_reference"):
        try:
            calls.update({(name, label): call for label, call in variants(name, args.layers).items()})
        except ImportError as error:
            print(f"{name}: not importable ({error})")
    medians = _medians_interleaved(calls, args.calls)
    for name in dict.fromkeys(name for name, _ in medians):
        base = medians[name, "jax.jit"]
        print(f"{name} ({args.layers} layers, median of {args.calls} interleaved calls)")
        for (impl, label), seconds in medians.items():
            if impl == name:
                print(f"  {label:14s} {seconds * 1e6:9.1f} us   x{seconds / base:6.2f} of jax.jit")


if __name__ == "__main__":
    main()
