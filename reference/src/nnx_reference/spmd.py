"""spmd: sharding annotations on Variables and the partition specs derived from them.

A Variable is annotated with ``out_sharding`` metadata: one logical or mesh axis
name (or None) per dimension of its value. Logical names are translated to mesh
axis names by the rules of the innermost :func:`logical_axis_rules` context. With
eager sharding on (the default, see :func:`use_eager_sharding`) a Variable
created with ``out_sharding`` is placed on its mesh right away.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import typing as tp
import warnings
from collections.abc import Iterator, Sequence

import jax
from jax.sharding import NamedSharding, PartitionSpec

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
AxisName = str | tuple[str, ...] | None
LogicalRules = Sequence[tuple[str, str | tuple[str, ...] | None]]

PARTITION_NAME = "partition_name"
SHARDING_KEY = "out_sharding"
"""The Variable metadata key holding one axis name per dimension."""


class Setting(threading.local):
    """One per-thread configuration value (each thread starts from ``default``)."""

    def __init__(self, default: tp.Any) -> None:
        self.default = default
        self.value = default


class ConfigContext:
    """Sets configuration values when called; after a plain call they stay set.

    Used as a context manager, it restores on exit the values that were current
    before the call. Used as a decorator, it undoes the call's change at once and
    sets the values only while the decorated function runs. This is the one
    mechanism behind ``set_graph_mode``, ``set_graph_updates``, ``var_defaults``
    and ``use_eager_sharding``.
    """

    def __init__(self, updates: Sequence[tuple[Setting, tp.Any]]) -> None:
        self._updates = tuple(updates)
        self._previous = _replace(self._updates)

    def __enter__(self) -> tp.Any:
        return self

    def __exit__(self, *exc: object) -> None:
        _replace(self._previous)

    def __call__(self, f: F) -> F:
        _replace(self._previous)
        updates = self._updates

        @functools.wraps(f)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            previous = _replace(updates)
            try:
                return f(*args, **kwargs)
            finally:
                _replace(previous)

        return wrapper  # type: ignore[return-value]


def _replace(updates: tuple[tuple[Setting, tp.Any], ...]) -> tuple[tuple[Setting, tp.Any], ...]:
    """Sets each Setting to its value; returns the values they had."""
    previous = tuple((setting, setting.value) for setting, _ in updates)
    for setting, value in updates:
        setting.value = value
    return previous


class BoolFlag(ConfigContext):
    """A ConfigContext over one boolean Setting, with flax's classmethods to read it."""

    _setting: tp.ClassVar[Setting]

    def __init__(self, value: bool, /) -> None:
        super().__init__(((self._setting, bool(value)),))

    @classmethod
    def get_stack(cls) -> list[bool]:
        """The values in effect, innermost last (here: just the current one)."""
        return [cls._setting.value]

    @classmethod
    def get_default(cls) -> bool:
        """The value before any call."""
        return cls._setting.default  # type: ignore[no-any-return]

    @classmethod
    def current_value(cls) -> bool:
        """The value in effect."""
        return cls._setting.value  # type: ignore[no-any-return]


class _AxisRules(threading.local):
    def __init__(self) -> None:
        self.rules: tuple[tuple[str, AxisName], ...] = ()


_context = _AxisRules()


# ---------------------------------------------------------------- eager sharding


class use_eager_sharding(BoolFlag):  # noqa: N801 (flax spells it as a function)
    """Sets whether new Variables shard their value eagerly by default (on by default).

    A plain call keeps the value set; used as a context manager it restores the
    previous value on exit; used as a decorator it applies only inside the function.
    """

    _setting = Setting(True)


def using_eager_sharding() -> bool:
    """Returns whether Variables are using eager sharding by default."""
    return use_eager_sharding.current_value()


def shard_value(value: tp.Any, out_sharding: tp.Any, mesh: jax.sharding.Mesh | None) -> tp.Any:
    """Places ``value`` according to ``out_sharding`` (Variable creation with eager
    sharding): on ``mesh`` if given, else on the mesh of the current ``jax.set_mesh``."""
    spec = _resolve(out_sharding)
    target = mesh if mesh is not None else jax.sharding.get_abstract_mesh()
    if target.empty:
        raise ValueError(
            "An auto mesh context or metadata is required if creating a variable with "
            f"annotation out_sharding={spec}. Set a mesh with jax.set_mesh(...), pass "
            "mesh=... metadata, or turn eager sharding off with "
            "nnx.use_eager_sharding(False)."
        )
    sharding = NamedSharding(target, spec) if mesh is not None else spec
    if _all_explicit(target, spec):
        return jax.sharding.reshard(value, sharding)
    return jax.lax.with_sharding_constraint(value, sharding)


def _all_explicit(mesh: tp.Any, spec: PartitionSpec) -> bool:
    """Whether every mesh axis ``spec`` uses is Explicit (resharding) rather than Auto."""
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    used = [a for entry in spec if entry is not None for a in (entry if isinstance(entry, tuple) else (entry,))]
    used = [a for a in used if a in types]
    if not used:
        return all(t == jax.sharding.AxisType.Explicit for t in types.values())
    return all(types[a] == jax.sharding.AxisType.Explicit for a in used)


# ---------------------------------------------------------------- logical axis rules


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


def _resolve(names: tp.Any) -> PartitionSpec:
    """The PartitionSpec for ``out_sharding`` names under the active axis rules."""
    if isinstance(names, PartitionSpec):
        names = tuple(names)
    rules = dict(_context.rules)
    return PartitionSpec(
        *(rules.get(name, name) if isinstance(name, str) else name for name in names)
    )


# ---------------------------------------------------------------- annotations to specs


def with_partitioning(
    initializer: F,
    sharding: tuple[AxisName, ...],
    mesh: jax.sharding.Mesh | None = None,
    **metadata: tp.Any,
) -> F:
    """A wrapper over any initializer to add sharding annotation data to a `Variable`."""
    from .variablelib import with_metadata

    return with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)


def _is_variable(x: tp.Any) -> bool:
    from .variablelib import Variable

    return isinstance(x, Variable)


def _variable_spec(variable: tp.Any) -> PartitionSpec:
    names = variable.get_metadata().get(SHARDING_KEY)
    return PartitionSpec() if names is None else _resolve(names)


def _leaf_spec(leaf: tp.Any) -> tp.Any:
    if _is_variable(leaf):
        return leaf.replace(_variable_spec(leaf))
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        return PartitionSpec()
    return None


def get_partition_spec(tree: A) -> A:
    """Extracts a PartitionSpec tree from a PyTree containing ``Variable`` values.

    Each Variable becomes a Variable of the same type holding the PartitionSpec of
    its ``out_sharding`` metadata (``P()`` when it has none); bare arrays become
    ``P()`` and other leaves None.
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
    from . import graphlib

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
    warnings.warn(
        "This function is deprecated. Use as_abstract instead.", DeprecationWarning, stacklevel=2
    )
    return as_abstract(tree, graph=graph)


def get_abstract_model(
    init_fn: tp.Callable[[], A], mesh: jax.sharding.Mesh, *, graph: bool | None = None
) -> tuple[tp.Any, tp.Any]:
    """Shapes of the model ``init_fn`` builds, without computing it, as
    ``(graphdef, abstract_state)`` whose ShapeDtypeStructs carry NamedShardings on
    ``mesh`` (replicated where a Variable has no ``out_sharding``)."""
    from . import graphlib
    from .transforms import eval_shape

    with jax.set_mesh(mesh):
        abstract = eval_shape(init_fn, graph=graph)
    graphdef, state = graphlib.split(abstract, graph=graph)
    state = jax.tree.map(
        lambda x: _with_sharding(x, mesh) if _is_variable(x) else x, state, is_leaf=_is_variable
    )
    return graphdef, state
