"""Variables: array-like boxes that hold a model's state, plus their metadata.

A :class:`Variable` wraps one value (usually a ``jax.Array``) and a metadata dict.
It is a JAX pytree with one child, the value, under the key ``GetAttrKey('value')``;
the metadata (sorted items) is the pytree's static auxiliary data. Subclasses
(:class:`Param`, :class:`BatchStat`, ...) label the kind of state so that filters
can select it. Every Variable carries the required metadata ``hijax``, ``ref`` and
``eager_sharding`` whose defaults come from :func:`var_defaults`.
"""

from __future__ import annotations

import functools
import typing as tp
import warnings

import jax
import numpy as np

from . import _hijax, reprlib
from ._operators import ValueOperators, value_of
from ._sharding import shard_value, use_eager_sharding, using_eager_sharding
from ._tracing import check_same_trace, current_trace_state, inside_transformation
from ._variable_metadata import (
    HOOK_NAMES,
    HOOKS_DEPRECATED,
    MISSING,
    RAW_VALUE_GET_DEPRECATED,
    RAW_VALUE_SET_DEPRECATED,
    REQUIRED_METADATA,
    VALUE_GET_DEPRECATED,
    VALUE_SET_DEPRECATED,
    Metadata,
    VariableMetadata,
    as_ref,
    rename_sharding_keys,
    same_items,
    sorted_items,
    unpack,
    var_defaults,
    wants_ref,
    with_metadata,
)
from .errors import ImmutableVariableError

__all__ = [
    "A",
    "BatchStat",
    "Cache",
    "Intermediate",
    "Param",
    "Perturbation",
    "Variable",
    "VariableMetadata",
    "register_variable_name",
    "use_eager_sharding",
    "using_eager_sharding",
    "var_defaults",
    "variable_name_from_type",
    "variable_type_from_name",
    "with_metadata",
]

A = tp.TypeVar("A")
V = tp.TypeVar("V", bound="Variable")


# ---------------------------------------------------------------- Variable


def _keep(variable: Variable[tp.Any], raw: tp.Any) -> None:
    """Stores ``raw`` as ``variable``'s value (a hijax Variable's as JAX takes an operand, as
    flax's); a function, not a method: flax's writes do not go through ``set_raw_value``."""
    object.__setattr__(variable, "_raw_value", _hijax.canonical(raw) if variable._hijax else raw)


def _same_array_type(raw: tp.Any, value: tp.Any) -> bool:
    """Whether ``value`` is a JAX array of ``raw``'s shape and dtype: ``variable[...] = value``
    then stores it as it is (weak type included) instead of scattering into ``raw``."""
    arrays = jax.Array | jax.core.Tracer
    return (
        isinstance(raw, arrays) and isinstance(value, arrays) and raw.shape == value.shape and raw.dtype == value.dtype
    )


def _hijax_metadata(metadata: tp.Mapping[str, tp.Any]) -> Metadata:
    """A hijax Variable's metadata, sorted by name as flax keeps it (so its repr lists it so)."""
    return Metadata(sorted(metadata.items()))


class Variable(ValueOperators, tp.Generic[A], metaclass=_hijax.VariableMeta):
    """The base class for all Variable types; subclass it to label new kinds of state.

    Reprs of Pytrees total their Variables by type name; a class may set
    ``__nnx_repr_group__`` to a name to be totalled under instead (inherited by subclasses).
    """

    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for arrays
    _hijax: tp.ClassVar[bool] = False  # True on the hijax twin of a class (see ``_hijax``)
    required_metadata: tp.ClassVar[frozenset[str]] = frozenset(REQUIRED_METADATA)  # the keys every Variable has
    _raw_value: tp.Any
    _var_metadata: Metadata

    def __init__(
        self,
        value: A | VariableMetadata[A],
        *,
        hijax: bool | None = None,
        ref: bool | None = None,
        eager_sharding: bool | None = None,
        **metadata: tp.Any,
    ) -> None:
        given = {"hijax": hijax, "ref": ref, "eager_sharding": eager_sharding}
        if isinstance(value, VariableMetadata):
            value, metadata = unpack(value, metadata, given)
        if any(reprlib.is_ref(leaf) for leaf in jax.tree.leaves(value)):
            raise ValueError("Cannot pass a Ref directly into Variable constructor.")
        defaults = {**var_defaults(), "eager_sharding": using_eager_sharding()}
        metadata.update({key: defaults[key] if given[key] is None else given[key] for key in REQUIRED_METADATA})
        for name in HOOK_NAMES:  # hooks a subclass defines as methods, unless given
            if name not in metadata and hasattr(type(self), name):
                metadata[name] = getattr(type(self), name)
        if any(metadata.get(name) for name in HOOK_NAMES):
            warnings.warn(HOOKS_DEPRECATED, UserWarning, stacklevel=1)
        rename_sharding_keys(metadata)
        object.__setattr__(self, "_var_metadata", Metadata(metadata))
        object.__setattr__(self, "_trace_state", current_trace_state())
        for hook in self._hooks("on_create_value"):
            value = hook(self, value)
        value = self.create_value(value)
        if metadata["eager_sharding"] and metadata.get("out_sharding"):  # an empty one places nothing, as flax's
            value = shard_value(value, metadata["out_sharding"], metadata.get("mesh"))
        if wants_ref(metadata):
            value = as_ref(value)
        object.__setattr__(self, "_raw_value", _hijax.canonical(value) if metadata["hijax"] else value)
        if metadata["hijax"]:
            object.__setattr__(self, "__class__", _hijax.twin(type(self), True))
            object.__setattr__(self, "_var_metadata", _hijax_metadata(metadata))

    def __init_subclass__(cls, hijax: bool = False, **kwargs: tp.Any) -> None:
        super().__init_subclass__(**kwargs)
        if not hijax:  # a hijax twin is a JAX type of its own, not a pytree
            _register_pytree(cls)

    # -- construction helpers

    @classmethod
    def _new(cls: type[V], raw_value: tp.Any, metadata: tp.Mapping[str, tp.Any]) -> V:
        """Builds a Variable without running ``__init__``, of ``cls`` or its hijax twin as the
        ``hijax`` metadata asks (used by copies and rebuilds); KeyError without it, as flax."""
        if bool(metadata["hijax"]) != cls._hijax:
            cls = _hijax.twin(cls, not cls._hijax)  # type: ignore[assignment]
        return cls._make(raw_value, _hijax_metadata(metadata) if metadata["hijax"] else metadata)

    @classmethod
    def _make(cls: type[V], raw_value: tp.Any, metadata: tp.Mapping[str, tp.Any]) -> V:
        """Builds a Variable of exactly ``cls`` without running ``__init__`` (used by unflatten)."""
        variable = object.__new__(cls)
        object.__setattr__(variable, "_raw_value", _hijax.canonical(raw_value) if cls._hijax else raw_value)
        object.__setattr__(variable, "_var_metadata", Metadata(metadata))
        object.__setattr__(variable, "_trace_state", current_trace_state())
        return variable

    @classmethod
    def from_metadata(cls: type[V], value: tp.Any, attributes: dict[str, tp.Any]) -> V:
        """A Variable of this type holding ``value`` with exactly the metadata ``attributes``,
        which must name ``hijax`` (KeyError otherwise)."""
        return cls._new(value, attributes)

    def create_value(self, value: A) -> A:
        """Hook for subclasses: transforms the value given to the constructor."""
        return value

    def copy(self, value: tp.Any = MISSING, **updates: tp.Any) -> Variable[tp.Any]:
        """A new Variable of the same type with the same (or the given) value and metadata; a
        ``ref=True`` Variable's copy holds a Ref of its own."""
        if value is MISSING:
            raw = as_ref(self._raw_value[...]) if reprlib.is_ref(self._raw_value) else self._raw_value
        else:
            raw = as_ref(value) if reprlib.is_ref(self._raw_value) and not reprlib.is_ref(value) else value
        return type(self)._new(raw, {**self._var_metadata, **updates})

    replace = copy

    def to_state(self, value: tp.Any = MISSING, **updates: tp.Any) -> Variable[tp.Any]:
        """A copy of this Variable (Variables are their own state in this version)."""
        return self.copy(value, **updates)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value."""
        return self.get_value().shape  # type: ignore[attr-defined, no-any-return]

    @property
    def sharding_names(self) -> tp.Any:
        """Deprecated name of the ``out_sharding`` metadata (None when unset)."""
        warnings.warn("'sharding_names' is deprecated, use 'out_sharding' instead.", DeprecationWarning, stacklevel=2)
        return self._var_metadata.get("out_sharding")

    def copy_from(self, other: Variable[A]) -> None:
        """Takes ``other``'s value and metadata in place: ``other`` of exactly this class (a
        hijax Variable takes any instance of its type), else ValueError, as flax's."""
        fits = isinstance(other, self.type) if self._hijax else type(other) is type(self)
        if not fits:
            got = other.type.__name__ if self._hijax else type(other).__name__
            raise ValueError(f"Cannot copy from incompatible container, expected {self.type.__name__}, got {got}")
        self.update_from_state(other)

    def update_from_state(self, variable_state: Variable[A]) -> None:
        """Takes the value and metadata of ``variable_state`` in place, whatever its type, but
        keeps its own ``hijax`` and ``ref``; equal metadata keeps its own objects and key order,
        as flax's."""
        _keep(self, variable_state._raw_value)
        if not same_items(sorted_items(self._var_metadata), sorted_items(variable_state._var_metadata)):
            taken = {**variable_state._var_metadata, "hijax": self.hijax, "ref": self.ref}  # what it was made as
            object.__setattr__(self, "_var_metadata", _hijax_metadata(taken) if self._hijax else Metadata(taken))

    # -- value access

    @property
    def type(self) -> type[Variable[A]]:
        """The type of the variable."""
        return type(self)

    var_type = type

    @property
    def value(self) -> A:
        """The Variable's value; deprecated for ``variable[...]`` or ``get_value()`` (setting
        it, handled by ``__setattr__``, for ``variable[...] = value`` or ``set_value``)."""
        warnings.warn(VALUE_GET_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self.get_value()

    @property
    def raw_value(self) -> A:
        """The stored value, without get hooks applied; deprecated for ``get_raw_value()``
        (setting it, handled by ``__setattr__``, for ``set_raw_value``)."""
        warnings.warn(RAW_VALUE_GET_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self._raw_value

    def get_raw_value(self) -> A:
        """The stored value, without get hooks applied."""
        return self._raw_value

    def set_raw_value(self, value: A, *, _unsafe_bypass_check: bool = False) -> None:
        """Replaces the stored value, without set hooks."""
        _keep(self, value)

    def get_value(self, *, index: tp.Any = MISSING) -> A:
        """The value (after get hooks), or ``value[index]`` when ``index`` is given."""
        value = self._raw_value
        if reprlib.is_ref(value):
            value = value[...]
        for hook in self._hooks("on_get_value"):
            value = hook(self, value)
        return value if index is MISSING else value[index]

    def set_value(self, value: A, *, index: tp.Any = MISSING) -> None:
        """Sets the value (after set hooks), or ``value[index] = value`` when ``index`` is given
        (not a NumPy array of several elements, which flax's writes refuse)."""
        if isinstance(index, np.ndarray) and index.size > 1:
            raise ValueError(
                f"Cannot write {self.type.__name__} at a NumPy array index of {index.size} elements: "
                "its truth value is ambiguous to flax.nnx, which refuses it; index with a jax.Array instead."
            )
        raw = self._raw_value
        self._check_can_update(raw)
        value = value_of(value)
        for hook in self._hooks("on_set_value"):
            value = hook(self, value)
        if index is MISSING:
            if reprlib.is_ref(raw):
                raw[...] = value
            else:
                _keep(self, value)
        elif reprlib.is_ref(raw):
            raw[index] = value
        elif index is Ellipsis and _same_array_type(raw, value):
            _keep(self, value)
        elif isinstance(raw, jax.Array | jax.core.Tracer):
            _keep(self, raw.at[index].set(value))
        else:  # a NumPy array or another mutable container: in place
            raw[index] = _hijax.canonical(value) if self._hijax else value

    def _check_can_update(self, raw: tp.Any) -> None:
        """Raises unless this Variable may be set here: a Ref may be written from any trace;
        a plain value only from the trace that made it, and a hijax one only outside transformations."""
        if self._var_metadata.get("mutable", True) is False:
            raise ImmutableVariableError(f"Cannot mutate {self.type.__name__} as it is marked as immutable.")
        if reprlib.is_ref(raw):
            return
        if self._var_metadata.get("hijax") and inside_transformation():
            raise ImmutableVariableError(
                f"Cannot update a non-ref hijax {self.type.__name__} inside JAX transformations. To mutate "
                "variables within jit, grad, scan, or other JAX transforms, use ref=True."
            )
        check_same_trace(self.__dict__.get("_trace_state"), f"{self.type.__name__} from a different trace")

    def __getitem__(self, index: tp.Any) -> tp.Any:
        return self.get_value(index=index)

    def __setitem__(self, index: tp.Any, value: tp.Any) -> None:
        self.set_value(value, index=index)

    def __delitem__(self, index: tp.Any) -> None:
        """Deletes ``value[index]`` from the value read, then sets the value."""
        value = self.get_value()
        del value[index]  # type: ignore[attr-defined]
        self.set_value(value)

    # -- metadata

    def get_metadata(
        self, name: str | None = None, default: tp.Any = MISSING, *, exclude_required: bool | None = None
    ) -> tp.Any:
        """The metadata dict (without the required keys if ``exclude_required``), or one entry;
        a name with ``exclude_required``, or a default without a name, is a TypeError."""
        if name is not None and exclude_required is not None:
            raise TypeError("Cannot specify both 'name' and 'exclude_required' arguments.")
        if name is None and default is not MISSING:
            raise TypeError(f"Cannot provide a default value when 'name' is not provided. Got default={default}")
        if name is None:
            if exclude_required:
                return {k: v for k, v in self._var_metadata.items() if k not in REQUIRED_METADATA}
            return dict(self._var_metadata)
        if name in self._var_metadata:
            return self._var_metadata[name]
        if default is MISSING:
            raise KeyError(name)
        return default

    def set_metadata(self, *args: tp.Any, **kwargs: tp.Any) -> None:
        """Replaces all metadata (one argument: a mapping, or pairs as ``dict`` takes them), sets
        one entry (name, value), or updates from kwargs; positional and keyword arguments do
        not mix (TypeError, as flax's).

        ``hijax`` and ``ref`` stay as the Variable was made (ValueError, as flax's), and so does
        ``eager_sharding`` in a dict that replaces all metadata."""
        if args and kwargs:
            raise TypeError(f"Cannot mix positional and keyword arguments in set_metadata of {self.type.__name__}")
        if len(args) == 1:
            replacing = dict(args[0])
            rename_sharding_keys(replacing, stacklevel=3)
            self._check_unchanged(replacing, REQUIRED_METADATA)
            required = {k: self._var_metadata[k] for k in REQUIRED_METADATA if k in self._var_metadata}
            object.__setattr__(self, "_var_metadata", Metadata({**replacing, **required}))
        elif len(args) == 2:
            entry = {args[0]: args[1]}
            rename_sharding_keys(entry, stacklevel=3)
            self._check_unchanged(entry, _FIXED_METADATA)
            self._var_metadata.update(entry)
        elif kwargs:
            rename_sharding_keys(kwargs, stacklevel=3)
            self._check_unchanged(kwargs, _FIXED_METADATA)
            self._var_metadata.update(kwargs)
        else:
            raise TypeError(
                f"set_metadata of {self.type.__name__} takes either 1 or 2 arguments, or at least 1 keyword "
                f"argument, got args={args!r}, kwargs={kwargs!r}"
            )

    def has_metadata(self, name: str) -> bool:
        """Whether the metadata has an entry ``name``."""
        return name in self._var_metadata

    def _check_unchanged(self, updates: tp.Mapping[str, tp.Any], keys: tp.Iterable[str]) -> None:
        for key in keys:
            if key in updates and key in self._var_metadata and updates[key] != self._var_metadata[key]:
                raise ValueError(
                    f"Cannot change `{key}` metadata, expected {self._var_metadata[key]}, got {updates[key]}"
                )

    def del_metadata(self, name: str) -> None:
        """Deletes the metadata entry ``name`` (not ``hijax`` or ``ref``: ValueError, as flax's)."""
        if name in _FIXED_METADATA:
            raise ValueError(f"Cannot delete `{name}` metadata")
        del self._var_metadata[name]

    @property
    def hijax(self) -> bool:
        return self._var_metadata["hijax"]

    @property
    def ref(self) -> bool:
        return self._var_metadata["ref"]

    def _hooks(self, name: str) -> tuple[tp.Callable[..., tp.Any], ...]:
        """The hooks kept under the metadata key ``name``: a tuple of them, or one alone."""
        hooks = self._var_metadata.get(name, ())
        return hooks if isinstance(hooks, tuple) else (hooks,)

    def add_axis(self, axis_index: int, axis_name: tp.Any) -> None:
        """Runs the ``on_add_axis`` hooks: a transform added an axis at ``axis_index``."""
        for hook in self._hooks("on_add_axis"):
            hook(self, axis_index, axis_name)

    def remove_axis(self, axis_index: int, axis_name: tp.Any) -> None:
        """Runs the ``on_remove_axis`` hooks: a transform removed the axis at ``axis_index``."""
        for hook in self._hooks("on_remove_axis"):
            hook(self, axis_index, axis_name)

    # -- attribute access

    def __getattr__(self, name: str) -> tp.Any:
        """Metadata by name; any other attribute (``__array__``, ``__deepcopy__`` too) is the
        stored value's, as flax's: read past hooks, of a ref Variable's ``jax.Ref`` itself."""
        if name in _INTERNALS:
            raise AttributeError(name)
        metadata = self.__dict__.get("_var_metadata", {})
        if name in metadata:
            return metadata[name]
        return getattr(self._raw_value, name)

    def __setattr__(self, name: str, value: tp.Any) -> None:
        if name == "value":
            warnings.warn(VALUE_SET_DEPRECATED, DeprecationWarning, stacklevel=1)
            self.set_value(value)
            return
        if name == "raw_value":
            warnings.warn(RAW_VALUE_SET_DEPRECATED, DeprecationWarning, stacklevel=1)
            self.set_raw_value(value)
            return
        if name in _INTERNALS:
            object.__setattr__(self, name, value)
            return
        raise AttributeError(
            f"Cannot set attribute {name}. To set Variable metadata use either:\n\n"
            f"  variable.set_metadata({name}=value)\n\nor\n\n"
            f"  variable.set_metadata('{name}', value)"
        )

    def __delattr__(self, name: str) -> None:
        if name in _INTERNALS:
            object.__delattr__(self, name)
            return
        raise AttributeError(
            f"Cannot delete attribute {name}. To delete Variable metadata use:\n\n  variable.del_metadata('{name}')"
        )

    # -- array protocol

    def __jax_array__(self) -> tp.Any:
        return self.get_value()

    # -- repr

    def __nnx_repr__(self, summarize: bool = False) -> str:
        comment = ""
        size, nbytes = reprlib.size_and_bytes([self._raw_value])
        if size:
            comment = reprlib.size_comment(size, nbytes)
        shown = self._raw_value if self._var_metadata.get("ref") else self.get_value()
        attributes = [("value", reprlib.value_repr(shown, summarize))]
        attributes += [(key, reprlib.value_repr(item, summarize)) for key, item in self._shown_metadata()]
        return reprlib.object_repr(self.type.__name__, comment, attributes)

    def _shown_metadata(self) -> list[tuple[str, tp.Any]]:
        """The metadata a repr shows: all but the required entries at their defaults (a
        hijax Variable's by name, as flax shows them)."""
        metadata = self._var_metadata.items()
        return [
            (key, item)
            for key, item in (sorted(metadata) if self.hijax else metadata)
            if not (key in _REQUIRED_DEFAULTS and item is _REQUIRED_DEFAULTS[key])
        ]

    def __treescope_repr__(self, path: str | None, subtree_renderer: tp.Callable[..., tp.Any]) -> tp.Any:
        """treescope's rendering: the value as read and the metadata a repr shows, the value's
        size in the first line's comment."""
        value = self.get_value()
        size, nbytes = reprlib.size_and_bytes([value])
        return reprlib.treescope_constructor(
            self.type,
            {"value": value, **dict(self._shown_metadata())},
            path,
            subtree_renderer,
            comment=reprlib.size_comment(size, nbytes) if size else "",
        )

    def __repr__(self) -> str:
        return self.__nnx_repr__()

    def __copy__(self) -> Variable[A]:
        """A shallow copy: a new Variable holding the very same value (a ref Variable's Ref too)."""
        return type(self)._new(self._raw_value, dict(self._var_metadata))

    def __getstate__(self) -> dict[str, tp.Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_trace_state"}

    def __setstate__(self, state: dict[str, tp.Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_trace_state", current_trace_state())


def old_name(name: str) -> type[Variable[tp.Any]]:
    """The package's ``__getattr__``: ``VariableState``, flax's old name of :class:`Variable`, is
    the class, with flax's DeprecationWarning; any other name is missing."""
    if name != "VariableState":
        raise AttributeError(f"module {__package__!r} has no attribute {name!r}")
    warnings.warn(
        "'VariableState' was removed, this is just an alias to 'Variable'. Plase use 'Variable' directly instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return Variable


_FIXED_METADATA = ("hijax", "ref")  # what a Variable was made as: its class and storage
_INTERNALS = frozenset({"_raw_value", "_var_metadata", "_trace_state"})  # a Variable's own attributes
_REQUIRED_DEFAULTS = {"hijax": False, "ref": False, "eager_sharding": True}


def _flatten_with_keys(variable: Variable[tp.Any]) -> tuple[tuple[tuple[tp.Any, tp.Any], ...], tp.Any]:
    return ((jax.tree_util.GetAttrKey("value"), variable._raw_value),), sorted_items(variable._var_metadata)


def _register_pytree(cls: type[Variable[tp.Any]]) -> None:
    jax.tree_util.register_pytree_with_keys(
        cls,
        _flatten_with_keys,
        lambda metadata, children: cls._make(children[0], dict(metadata)),
        lambda variable: ((variable._raw_value,), sorted_items(variable._var_metadata)),
    )


_register_pytree(Variable)


class Param(Variable[A]):
    """The canonical learnable parameter."""


class BatchStat(Variable[A]):
    """Running batch statistics (e.g. BatchNorm's mean and var); not learnable."""


class Cache(Variable[A]):
    """Autoregressive cache (e.g. MultiHeadAttention in decode mode)."""


class Intermediate(Variable[A]):
    """Intermediate values stored with ``Module.sow``."""


class Perturbation(Intermediate[A]):
    """Perturbations added with ``Module.perturb`` to take gradients of intermediates."""


# ---------------------------------------------------------------- name registry

_NAME_TO_TYPE: dict[str, type[Variable[tp.Any]]] = {
    "params": Param,
    "batch_stats": BatchStat,
    "cache": Cache,
    "intermediates": Intermediate,
    "perturbations": Perturbation,
}


def register_variable_name(name: str, typ: tp.Any = MISSING, *, overwrite: bool = False) -> tp.Any:
    """Registers a pair of Linen collection name and its NNX Variable type (also a decorator)."""
    if typ is MISSING:
        return functools.partial(register_variable_name, name, overwrite=overwrite)
    if name in _NAME_TO_TYPE and not overwrite:
        raise ValueError(
            f"Name {name} already mapped to type {_NAME_TO_TYPE[name]}. "
            "To overwrite, call register_variable_name() with `overwrite=True`."
        )
    _NAME_TO_TYPE[name] = typ
    return typ


def variable_name_from_type(typ: type[Variable[tp.Any]], /, *, allow_register: bool = False) -> str:
    """Given an NNX Variable type, get its Linen-style collection name."""
    for name, registered in _NAME_TO_TYPE.items():
        if registered is typ:
            return name
    if not allow_register:
        raise ValueError(
            f"Type {typ} is not registered in the registry. To register a new type, use "
            "register_variable_name() or set allow_register=True."
        )
    register_variable_name(typ.__name__, typ)
    return typ.__name__


def variable_type_from_name(
    name: str, /, *, base: type[Variable[tp.Any]] = Variable, allow_register: bool = False
) -> type[Variable[tp.Any]]:
    """Given a Linen-style collection name, get or create its NNX Variable class."""
    if name in _NAME_TO_TYPE:
        return _NAME_TO_TYPE[name]
    if not allow_register:
        raise ValueError(
            f"Name {name} is not registered in the registry. To register a new name, use "
            "register_variable_name() or set allow_register=True."
        )
    typ = type(name, (base,), {"__module__": __name__})
    return register_variable_name(name, typ)
