"""Sharding primitives that Variables use when they are created.

An ``out_sharding`` annotation names one logical or mesh axis (or None) per
dimension of a value. :func:`logical_axis_rules` translates logical names to mesh
axes; :func:`use_eager_sharding` says whether a new Variable is placed on its mesh
right away (:func:`shard_value`). The public face of these is :mod:`spmd`.
"""

from __future__ import annotations

import contextlib
import threading
import typing as tp
from collections.abc import Iterator, Sequence

import jax
from jax.sharding import NamedSharding, PartitionSpec

from ._config import BoolFlag, Setting

AxisName = str | tuple[str, ...] | None
LogicalRules = Sequence[tuple[str, AxisName]]

PARTITION_NAME = "partition_name"
SHARDING_KEY = "out_sharding"
"""The Variable metadata key holding one axis name per dimension."""


class use_eager_sharding(BoolFlag):  # lowercase: flax spells it as a function
    """Sets whether new Variables shard their value eagerly by default (on by default).

    A plain call keeps the value set; used as a context manager it restores the
    previous value on exit; used as a decorator it applies only inside the function.
    """

    _setting = Setting(True)


def using_eager_sharding() -> bool:
    """Returns whether Variables are using eager sharding by default."""
    return use_eager_sharding.current_value()


class _AxisRules(threading.local):
    def __init__(self) -> None:
        self.rules: tuple[tuple[str, AxisName], ...] = ()


_context = _AxisRules()


@contextlib.contextmanager
def logical_axis_rules(rules: LogicalRules) -> Iterator[None]:
    """Context manager for setting the logical to mesh axis bindings.

    Inside it, each logical name of an ``out_sharding`` annotation is replaced by the
    mesh axis its rule names (the last rule for a name wins; unknown names stay).
    """
    previous = _context.rules
    _context.rules = tuple(rules)
    try:
        yield
    finally:
        _context.rules = previous


def partition_spec(names: tp.Any) -> PartitionSpec:
    """The PartitionSpec for ``out_sharding`` names under the active axis rules."""
    if isinstance(names, PartitionSpec):
        names = tuple(names)
    rules = dict(_context.rules)
    return PartitionSpec(*(rules.get(name, name) if isinstance(name, str) else name for name in names))


def shard_value(value: tp.Any, out_sharding: tp.Any, mesh: jax.sharding.Mesh | None) -> tp.Any:
    """Places every leaf of ``value`` according to ``out_sharding`` (Variable creation with
    eager sharding): on the mesh of a NamedSharding, on ``mesh`` if given, else on the mesh
    of the current ``jax.set_mesh``. A leaf that is no array becomes one, as JAX takes it
    (a NumPy array, a Python number), or fails there (a string, a ShapeDtypeStruct)."""
    if isinstance(out_sharding, NamedSharding):
        return _place(value, out_sharding, out_sharding.mesh, out_sharding.spec)
    target = mesh if mesh is not None else jax.sharding.get_abstract_mesh()
    if target.empty:  # checked first, as flax: out_sharding that names no axes is refused here too
        shown = partition_spec(out_sharding) if isinstance(out_sharding, (tuple, list)) else out_sharding
        raise ValueError(
            "An auto mesh context or metadata is required if creating a variable with "
            f"annotation out_sharding={shown}. Set a mesh with jax.set_mesh(...), pass "
            "mesh=... metadata, or turn eager sharding off with "
            "nnx.use_eager_sharding(False)."
        )
    spec = partition_spec(out_sharding)
    return _place(value, NamedSharding(target, spec) if mesh is not None else spec, target, spec)


def on_mesh(value: jax.ShapeDtypeStruct, metadata: tp.Mapping[str, tp.Any]) -> jax.ShapeDtypeStruct:
    """An abstract value as flax's ``eval_shape`` leaves it in a Variable with ``metadata``:
    one without a sharding gets a NamedSharding on the ``mesh`` metadata, else on the mesh
    of the current ``jax.set_mesh``, with the spec of ``out_sharding`` (``P()`` without
    one); without a mesh, or with a sharding already, it is kept."""
    mesh = metadata.get("mesh")
    if mesh is None:
        mesh = jax.sharding.get_abstract_mesh()
    if value.sharding is not None or mesh.empty:
        return value
    names = metadata.get(SHARDING_KEY)
    return value.update(sharding=NamedSharding(mesh, PartitionSpec() if names is None else partition_spec(names)))


def _place(value: tp.Any, sharding: NamedSharding | PartitionSpec, mesh: tp.Any, spec: PartitionSpec) -> tp.Any:
    """Each leaf of ``value`` resharded (Explicit mesh axes) or constrained (Auto ones) to ``sharding``."""
    place = jax.sharding.reshard if _all_explicit(mesh, spec) else jax.lax.with_sharding_constraint
    return jax.tree.map(lambda leaf: place(leaf, sharding), value)


def _all_explicit(mesh: tp.Any, spec: PartitionSpec) -> bool:
    """Whether every mesh axis ``spec`` uses is Explicit (resharding) rather than Auto."""
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    used = [a for entry in spec if entry is not None for a in (entry if isinstance(entry, tuple) else (entry,))]
    used = [a for a in used if a in types]
    if not used:
        return all(t == jax.sharding.AxisType.Explicit for t in types.values())
    return all(types[a] == jax.sharding.AxisType.Explicit for a in used)
