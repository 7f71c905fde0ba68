"""spmd: sharding annotations on Variables and the partition specs derived from them.

A Variable is annotated with ``out_sharding`` metadata: one logical or mesh axis
name (or None) per dimension of its value. Logical names are translated to mesh
axis names by the rules of the innermost :func:`logical_axis_rules` context. With
eager sharding on (the default, see :func:`use_eager_sharding`) a Variable
created with ``out_sharding`` is placed on its mesh right away.
"""

from __future__ import annotations

import typing as tp
import warnings

import jax
from jax.sharding import NamedSharding, PartitionSpec

from . import graphlib
from ._sharding import (
    PARTITION_NAME,
    SHARDING_KEY,
    AxisName,
    logical_axis_rules,
    partition_spec,
    use_eager_sharding,
    using_eager_sharding,
)
from .transforms import eval_shape
from .variablelib import Variable, with_metadata

__all__ = [
    "PARTITION_NAME",
    "abstract_with_sharding",
    "as_abstract",
    "get_abstract_model",
    "get_named_sharding",
    "get_partition_spec",
    "logical_axis_rules",
    "use_eager_sharding",
    "using_eager_sharding",
    "with_partitioning",
]

A = tp.TypeVar("A")
F = tp.TypeVar("F", bound=tp.Callable[..., tp.Any])


# ---------------------------------------------------------------- annotations to specs


def with_partitioning(
    initializer: F,
    sharding: tuple[AxisName, ...],
    mesh: jax.sharding.Mesh | None = None,
    **metadata: tp.Any,
) -> F:
    """A wrapper over any initializer to add sharding annotation data to a `Variable`."""
    return with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)


def _is_variable(x: tp.Any) -> bool:
    return isinstance(x, Variable)


def _variable_spec(variable: tp.Any) -> PartitionSpec:
    names = variable.get_metadata().get(SHARDING_KEY)
    return PartitionSpec() if names is None else partition_spec(names)


def _leaf_spec(leaf: tp.Any) -> tp.Any:
    if _is_variable(leaf):
        if not leaf.get_metadata().get(SHARDING_KEY) and not hasattr(leaf, "shape"):
            return leaf.replace(None)  # a value without a shape and no partition names: no spec, as flax
        return leaf.replace(_variable_spec(leaf))
    if hasattr(leaf, "shape"):  # anything with a shape (a NumPy dtype too), as flax
        return PartitionSpec()
    return None


def get_partition_spec(tree: A) -> A:
    """Extracts a PartitionSpec tree from a PyTree containing ``Variable`` values.

    Each Variable becomes a Variable of the same type holding the PartitionSpec of
    its ``out_sharding`` metadata (``P()`` when it has none, None when its value has
    no shape either); bare arrays become ``P()`` and other leaves None.
    """
    return jax.tree.map(_leaf_spec, tree, is_leaf=_is_variable)


def get_named_sharding(tree: A, mesh: jax.sharding.Mesh) -> A:
    """Like :func:`get_partition_spec`, with each spec made a NamedSharding on ``mesh``."""

    def to_sharding(spec: tp.Any) -> tp.Any:
        return NamedSharding(mesh, spec) if isinstance(spec, PartitionSpec) else spec

    specs = get_partition_spec(tree)
    return jax.tree.map(to_sharding, specs, is_leaf=lambda x: isinstance(x, PartitionSpec))


# ---------------------------------------------------------------- abstract models


def _with_sharding(variable: tp.Any, mesh: tp.Any) -> tp.Any:
    """A copy of an abstract Variable whose ShapeDtypeStruct carries a NamedSharding."""
    value = variable.get_value()
    if not isinstance(value, jax.ShapeDtypeStruct):
        return variable
    metadata = variable.get_metadata()
    if getattr(value, "sharding", None) is not None and mesh is None:
        return variable
    if SHARDING_KEY not in metadata and mesh is None:
        return variable
    target_mesh = mesh if mesh is not None else metadata.get("mesh")
    if target_mesh is None:
        target_mesh = jax.sharding.get_abstract_mesh()
    sharding = NamedSharding(target_mesh, _variable_spec(variable))
    return variable.replace(jax.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding))


def _map_variables(tree: A, f: tp.Callable[[tp.Any], tp.Any], graph: bool | None) -> A:
    graphdef, state = graphlib.split(tree, graph=graph)
    state = jax.tree.map(lambda x: f(x) if _is_variable(x) else x, state, is_leaf=_is_variable)
    return graphlib.merge(graphdef, state)


def as_abstract(tree: A, graph: bool | None = None) -> A:
    """Add sharding information to abstract Variables.

    Every Variable of ``tree`` (e.g. a model from :func:`eval_shape`) whose value is a
    ``jax.ShapeDtypeStruct`` without sharding and that has ``out_sharding`` metadata
    gets a NamedSharding on its ``mesh`` metadata or the current abstract mesh.
    """
    return _map_variables(tree, lambda v: _with_sharding(v, None), graph)


def abstract_with_sharding(tree: A, graph: bool | None = None) -> A:
    """Deprecated alias of :func:`as_abstract`."""
    warnings.warn("This function is deprecated. Use as_abstract instead.", DeprecationWarning, stacklevel=2)
    return as_abstract(tree, graph=graph)


def get_abstract_model(
    init_fn: tp.Callable[[], A], mesh: jax.sharding.Mesh, *, graph: bool | None = None
) -> tuple[tp.Any, tp.Any]:
    """Shapes of the model ``init_fn`` builds, without computing it, as
    ``(graphdef, abstract_state)`` whose ShapeDtypeStructs carry NamedShardings on
    ``mesh`` (replicated where a Variable has no ``out_sharding``)."""
    with jax.set_mesh(mesh):
        abstract = eval_shape(init_fn, graph=graph)
    graphdef, state = graphlib.split(abstract, graph=graph)
    state = jax.tree.map(lambda x: _with_sharding(x, mesh) if _is_variable(x) else x, state, is_leaf=_is_variable)
    return graphdef, state
