"""Differential tests of orbax checkpoints (the checkpointing and surgery guides): a State
saved by either implementation restores into either one's abstract model bit for bit,
Rng keys and sharded arrays included, and both write the same tree to disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest
from jax.sharding import AxisType

from nnx_conformance.testing.layer_cases import flat_leaves, state_difference
from nnx_conformance.testing.outcomes import Side, yardstick_side

pytestmark = pytest.mark.kind("differential")

Build = Callable[[Any], Any]
"""Builds a model with the given nnx module, from fixed seeds."""


def _layers_and_rngs(nnx: Any) -> Any:
    """Params, batch statistics, a Dropout's forked stream and the model's own Rngs."""

    class Model(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.layers = nnx.List([nnx.Linear(3, 4, rngs=rngs), nnx.BatchNorm(4, rngs=rngs)])
            self.dropout = nnx.Dropout(0.5, rngs=rngs)
            self.rngs = rngs

    return Model(nnx.Rngs(0, dropout=7))


def _lora(nnx: Any) -> Any:
    """A LoRALinear: a kernel, a bias and LoRAParam factors under one module."""
    return nnx.LoRALinear(3, 5, lora_rank=2, b_initializer=jax.nn.initializers.normal(), rngs=nnx.Rngs(3))


MODELS: dict[str, Build] = {"layers and Rngs": _layers_and_rngs, "LoRALinear": _lora}


class Leaf(NamedTuple):
    """What a checkpoint must keep of one Variable beside its value: dtype and sharding."""

    path: tuple[str, ...]
    dtype: str
    sharding: str


def _placement(nnx: Any, state: Any) -> list[Leaf]:
    leaves = []
    for path, variable in nnx.to_flat_state(state):
        value = variable.get_value()
        leaves.append(Leaf(tuple(map(str, path)), str(value.dtype), repr(value.sharding)))
    return leaves


class Saved(NamedTuple):
    """A state as one implementation holds it: Variables (``flat_leaves``) and placement."""

    leaves: list[Any]
    placement: list[Leaf]


def _saved(nnx: Any, state: Any) -> Saved:
    return Saved(flat_leaves(nnx, state), _placement(nnx, state))


def _difference(written: Saved, restored: Saved) -> str | None:
    """What first differs between a written state and the state restored from it, or None."""
    if len(written.placement) != len(restored.placement):
        return f"wrote {len(written.placement)} Variables, restored {len(restored.placement)}"
    for before, after in zip(written.placement, restored.placement):
        if before != after:
            return f"wrote {before}, restored {after}"
    return state_difference(written.leaves, restored.leaves)


def _standard_write(nnx: Any, build: Build, directory: Path) -> Saved:
    """As the checkpointing guide does: save the model's State with a StandardCheckpointer."""
    state = nnx.state(build(nnx))
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(directory, state)
    checkpointer.wait_until_finished()
    return _saved(nnx, state)


def _restore_into_eval_shape(nnx: Any, build: Build, directory: Path) -> Saved:
    """As the checkpointing guide does: restore into ``nnx.eval_shape``'s abstract state, then merge."""
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: build(nnx)))
    restored = ocp.StandardCheckpointer().restore(directory, abstract_state)
    assert type(restored) is nnx.State, f"restore gives {type(restored)}, not the reader's nnx.State"
    return _saved(nnx, nnx.state(nnx.merge(graphdef, restored)))


def _sides(nnx: Any, flax_nnx: Any) -> dict[str, Side]:
    return {"flax": yardstick_side(flax_nnx), "impl": Side(nnx)}


WRITER_READER = pytest.mark.parametrize(
    ("writer", "reader"),
    [("flax", "impl"), ("impl", "flax"), ("impl", "impl")],
    ids=["flax-writes-impl-reads", "impl-writes-flax-reads", "impl-writes-impl-reads"],
)


def _on_disk(nnx: Any, build: Build, directory: Path) -> list[tuple[str, str, np.ndarray]]:
    """The tree a PyTreeCheckpointer writes, read back raw (as the surgery guide does)."""
    ocp.PyTreeCheckpointer().save(directory, nnx.state(build(nnx)))
    raw = ocp.PyTreeCheckpointer().restore(directory)
    return [
        (
            jax.tree_util.keystr(path),
            str(leaf.dtype),
            np.asarray(jax.random.key_data(leaf) if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key) else leaf),
        )
        for path, leaf in jax.tree_util.tree_flatten_with_path(raw)[0]
    ]


@pytest.mark.apis("state")
@pytest.mark.parametrize("model", sorted(MODELS))
def test_both_implementations_write_the_same_tree_to_disk(nnx: Any, flax_nnx: Any, tmp_path: Path, model: str) -> None:
    sides = _sides(nnx, flax_nnx)
    expected = sides["flax"].run(_on_disk, MODELS[model], tmp_path / "flax", catch=False)
    actual = sides["impl"].run(_on_disk, MODELS[model], tmp_path / "impl", catch=False)
    described = ([(path, dtype) for path, dtype, _ in expected], [(path, dtype) for path, dtype, _ in actual])
    assert described[0] == described[1], f"{model}: flax writes {described[0]}, the implementation {described[1]}"
    for (path, _, e), (_, _, a) in zip(expected, actual):
        assert np.array_equal(e, a), f"{model}: {path} on disk is {e} from flax, {a} from the implementation"


def _pure_dict_write(nnx: Any, build: Build, directory: Path) -> Saved:
    state = nnx.state(build(nnx))
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(directory, nnx.to_pure_dict(state))
    checkpointer.wait_until_finished()
    return _saved(nnx, state)


def _pure_dict_restore(nnx: Any, build: Build, directory: Path) -> Saved:
    """As the guides do: restore a pure dict, put its int keys back, replace the abstract state's values."""
    restored = nnx.restore_int_paths(ocp.StandardCheckpointer().restore(directory))
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: build(nnx)))
    nnx.replace_by_pure_dict(abstract_state, restored)
    return _saved(nnx, nnx.state(nnx.merge(graphdef, abstract_state)))


ROUTES = {
    "a State restored into an eval_shape model": (_standard_write, _restore_into_eval_shape),
    "a pure dict restored through replace_by_pure_dict": (_pure_dict_write, _pure_dict_restore),
}
"""The ways the checkpointing guide saves a model and restores it: (write, restore)."""


@pytest.mark.apis("eval_shape", "split", "merge", "State", "to_pure_dict", "restore_int_paths", "replace_by_pure_dict")
@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("model", sorted(MODELS))
@WRITER_READER
def test_a_checkpoint_restores_bit_for_bit_across_implementations(
    nnx: Any, flax_nnx: Any, tmp_path: Path, route: str, model: str, writer: str, reader: str
) -> None:
    sides = _sides(nnx, flax_nnx)
    write, restore = ROUTES[route]
    written = sides[writer].run(write, MODELS[model], tmp_path / "checkpoint", catch=False)
    restored = sides[reader].run(restore, MODELS[model], tmp_path / "checkpoint", catch=False)
    difference = _difference(written, restored)
    assert difference is None, f"{model} as {route}, written by {writer}, restored by {reader}: {difference}"


def _mesh() -> jax.sharding.Mesh:
    return jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit, AxisType.Explicit))


def _sharded(nnx: Any) -> Any:
    """A Linear whose kernel and bias are sharded over the mesh's ``model`` axis (built under
    ``jax.set_mesh``), and its Rngs."""

    class Model(nnx.Module):
        def __init__(self, rngs: Any) -> None:
            self.linear = nnx.Linear(
                4,
                8,
                rngs=rngs,
                kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model")),
                bias_init=nnx.with_partitioning(nnx.initializers.normal(), ("model",)),
            )
            self.rngs = rngs

    return Model(nnx.Rngs(5))


def _sharded_write(nnx: Any, directory: Path) -> Saved:
    with jax.set_mesh(_mesh()):
        return _standard_write(nnx, _sharded, directory)


def _restore_into_abstract_model(nnx: Any, build: Build, directory: Path) -> Saved:
    """Restore into ``nnx.get_abstract_model``'s abstract state, whose leaves carry the mesh's shardings."""
    graphdef, abstract_state = nnx.get_abstract_model(lambda: build(nnx), _mesh())
    restored = ocp.StandardCheckpointer().restore(directory, abstract_state)
    return _saved(nnx, nnx.state(nnx.merge(graphdef, restored)))


@pytest.mark.multi_device
@pytest.mark.apis("get_abstract_model", "with_partitioning")
@WRITER_READER
def test_a_sharded_checkpoint_restores_with_its_shardings(
    nnx: Any, flax_nnx: Any, tmp_path: Path, writer: str, reader: str
) -> None:
    if len(jax.devices()) < 8:
        pytest.skip(f"the mesh is 2 x 4 devices; JAX has {len(jax.devices())}")
    sides = _sides(nnx, flax_nnx)
    written = sides[writer].run(_sharded_write, tmp_path / "sharded", catch=False)
    restored = sides[reader].run(_restore_into_abstract_model, _sharded, tmp_path / "sharded", catch=False)
    difference = _difference(written, restored)
    assert difference is None, f"the sharded model written by {writer}, restored by {reader}: {difference}"
