"""Pytree and Object: Python objects whose attributes split into data and static.

Every attribute of a :class:`Pytree` is either *data* (a pytree child: arrays,
Variables, other Pytrees, anything :func:`is_data` accepts, or anything marked with
:func:`data` / :data:`Data`) or *static* (part of the tree structure). The status is
decided on first assignment and kept in the instance dict under ``_pytree__nodes``;
a later assignment that would put data into a static attribute raises ``ValueError``.

A Pytree class is registered as a JAX pytree (unless created with ``pytree=False``, as
:class:`Object` is): its children are its data attributes sorted by name (integer
keys first, as ``nnx.List`` uses them), each under ``GetAttrKey(name)`` (or
``SequenceKey(i)`` for integer keys); its static attributes are the auxiliary data.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import operator
import threading
import typing as tp

import jax
import numpy as np

from . import _structure, reprlib
from ._pytree_marks import (
    Data,
    Marked,
    Static,
    annotation_status,
    data,
    field_status,
    static,
    warn_deprecated_annotations,
)
from ._tracing import check_same_trace, current_trace_state
from .tracers import TraceState
from .variablelib import Variable

__all__ = [
    "Data",
    "Object",
    "Pytree",
    "Static",
    "check_pytree",
    "data",
    "dataclass",
    "has_data",
    "is_data",
    "register_data_type",
    "static",
]

A = tp.TypeVar("A")
INTERNAL_PREFIX = "_pytree__"  # the bookkeeping attributes below, never part of the tree
NODES = "_pytree__nodes"
TRACE_STATE = "_pytree__trace_state"
_DATA_TYPES: set[type] = set()


def register_data_type(type_: type[A], /) -> type[A]:
    """Registers a type whose values are data when assigned to a Pytree attribute."""
    _DATA_TYPES.add(type_)
    return type_


def is_data(value: tp.Any, /) -> bool:
    """Whether ``value`` is of a data type: arrays, Refs, Variables, graph nodes, registered types."""
    # a registered type counts by its exact type (its subclasses are not data), as flax's
    return (
        isinstance(value, (jax.Array, np.ndarray, Variable, Pytree))
        or type(value) in _DATA_TYPES
        or reprlib.is_ref(value)
    )


def has_data(value: tp.Any, /) -> list[tp.Any]:
    """The data values (see :func:`is_data`) found among ``value``'s pytree leaves; an object
    met again is not walked twice but taken as a leaf, as flax takes it."""
    seen: set[int] = set()

    def leaf(x: tp.Any) -> bool:
        if id(x) in seen:
            return True
        seen.add(id(x))
        return is_data(x)

    return [x for x in jax.tree.leaves(value, is_leaf=leaf) if is_data(x)]


def check_pytree(pytree: tp.Any) -> None:
    """Checks that ``pytree`` is a Pytree (``TypeError``) that keeps data out of its own static
    attributes (``ValueError``); as flax's, the Pytrees it holds are not checked."""
    if not isinstance(pytree, Pytree):
        raise TypeError(f"Expected a Pytree, got {type(pytree)}.")
    # as flax's, an object that is no pytree (``pytree=False``) has no data attributes to it
    is_pytree = type(pytree)._pytree__is_pytree
    for name, value in vars(pytree).items():
        if _is_internal(name) or (is_pytree and pytree._pytree__nodes.get(name, False)):
            continue
        if has_data(value):
            raise ValueError(_unexpected_data_message(pytree, name, value))


def _unexpected_data_message(node: Pytree, name: str, value: tp.Any) -> str:
    """check_pytree's message for data found in a static attribute (flax's words)."""
    cls = type(node)
    base = _pytree_base(cls).__name__
    return (
        f"Found unexpected data on value of type {type(value)} in static attribute '{name}' of Pytree type "
        f"'{cls}'. This is an error starting from Flax version 0.12.0.\nConsider one of the following options:\n\n"
        "1. If the attribute is meant to be static, either remove the data value or wrap it in a static container.\n"
        f"2. Wrap the value with nnx.data on assignment:\n\n  _.{name} = nnx.data(...)\n\n"
        f"3. Annotate the class attribute with nnx.data:\n\n  class {cls.__name__}({base}):\n"
        f"    {name}: {type(value).__name__} = nnx.data()\n\n"
        "4. If the container is a list or dict, try using nnx.List(...) or nnx.Dict(...) instead.\n"
        f"5. Disable pytree for this class:\n\n  class {cls.__name__}({base}, pytree=False):\n\n"
    )


def _pytree_base(cls: type) -> type:
    """The first Pytree class among ``cls``'s bases in its MRO (``Pytree`` if none), the base
    the advice of data-in-static errors names."""
    return next((t for t in cls.__mro__[1:] if issubclass(t, Pytree)), Pytree)


def _sort_key(key: tp.Any) -> tuple[bool, tp.Any]:
    return (isinstance(key, str), key)


def _jax_key(key: tp.Any) -> tp.Any:
    if isinstance(key, int):
        return jax.tree_util.SequenceKey(key)
    return jax.tree_util.GetAttrKey(key)


def _static_with_data_message(node: Pytree, name: str, value: tp.Any, found: list[tp.Any]) -> str:
    cls = type(node)
    base = _pytree_base(cls).__name__
    types = "\n\n".join(f"  {t}" for t in dict.fromkeys(type(x).__name__ for x in found))
    return (
        f"Found data on value of type '{type(value)}' assigned to static attribute '{name}' of "
        f"Pytree type '{cls}'. Static attributes should not contain data values. Consider one of "
        "the following options:\n\n"
        f"1. If the attribute is meant to be static, remove the data values of type(s):\n\n{types}\n\n"
        "2. If the attribute is meant to be data, wrap the value with nnx.data  on assignment:\n\n"
        f"  _.{name} = nnx.data(...)\n\n"
        "3. Alternatively, annotate the class attribute with nnx.data:\n\n"
        f"  class {cls.__name__}({base}):\n    {name}: {type(value).__name__} = nnx.data()\n\n"
        "4. If the container is a list or dict, try using nnx.List(...) or nnx.Dict(...) instead.\n\n"
        f"5. Disable pytree for this class:\n\n  class {cls.__name__}({base}, pytree=False):\n"
    )


def _check_no_nested_marks(node: Pytree, name: tp.Any, value: tp.Any) -> None:
    """nnx.data(...) / nnx.static(...) must be assigned directly, not inside a container."""
    if isinstance(value, (list, tuple, dict)):
        marks = [x for x in jax.tree.leaves(value, is_leaf=lambda x: isinstance(x, Marked)) if isinstance(x, Marked)]
        if marks:
            tags = {"data" if m.status else "static" for m in marks}
            raise ValueError(
                f"Found unexpected tags {tags} on attribute '{type(node).__name__}.{name}'. Values from "
                "nnx.data(...) and\nnnx.static(...) should be assigned to nnx.Pytree attributes directly, they "
                f"should not be inside other structures. Got value of type '{type(value)}' on Pytree of type "
                f"'{type(node)}'."
            )


class HashableMapping(tp.Mapping[tp.Any, tp.Any]):
    """A read-only, hashable copy of a mapping, for mappings that live in static structure
    (how ``iter_graph`` shows a Pytree's attribute statuses)."""

    def __init__(self, mapping: tp.Mapping[tp.Any, tp.Any]) -> None:
        self._mapping = dict(mapping)

    def __getitem__(self, key: tp.Any) -> tp.Any:
        return self._mapping[key]

    def __iter__(self) -> tp.Iterator[tp.Any]:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __hash__(self) -> int:
        return hash(frozenset(self._mapping.items()))  # equal mappings in any order hash alike

    def __repr__(self) -> str:
        return f"HashableMapping({self._mapping!r})"


class PytreeState:
    """The per-instance bookkeeping entry ``iter_graph`` reports as ``_pytree__state``: the
    trace it was made in."""

    def __init__(self) -> None:
        self._trace_state = TraceState()

    @property
    def trace_state(self) -> TraceState:
        return self._trace_state

    def __repr__(self) -> str:
        return reprlib.object_repr("PytreeState", "", [("trace_state", repr(self._trace_state))])

    def __treescope_repr__(self, path: str | None, subtree_renderer: tp.Callable[..., tp.Any]) -> tp.Any:
        return reprlib.treescope_constructor(type(self), {"trace_state": self._trace_state}, path, subtree_renderer)


class _ReprGuard(threading.local):
    def __init__(self) -> None:
        self.active: set[int] = set()


_REPR_GUARD = _ReprGuard()


_deep_copy: tp.Callable[[tp.Any], tp.Any] | None = None


def set_deep_copy(copy_graph: tp.Callable[[tp.Any], tp.Any]) -> None:
    """Sets how ``copy.deepcopy`` copies a Pytree: graphlib, which sits above this module,
    registers its copy of a whole graph when it is imported."""
    global _deep_copy
    _deep_copy = copy_graph


class PytreeMeta(abc.ABCMeta):
    """The metaclass of Pytrees (an ``ABCMeta``, as flax's): once ``__init__`` has run, an
    attribute it set without ``__setattr__`` gets the status its value's type gives it, and
    the instance is checked with :func:`check_pytree`, so that data appended to a static
    attribute's list or dict is refused as flax refuses it."""

    def __call__(cls, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        node = super().__call__(*args, **kwargs)
        if isinstance(node, Pytree) and type(node)._pytree__is_pytree:
            nodes = node._pytree__nodes
            for name, value in vars(node).items():
                if name not in nodes and not _is_internal(name):
                    nodes[name] = is_data(value)
            check_pytree(node)
        return node


class Pytree(metaclass=PytreeMeta):
    """Base class for all NNX objects; instances are JAX pytrees of their data attributes."""

    _pytree__is_pytree: tp.ClassVar[bool] = True
    _pytree__colored: tp.ClassVar[bool] = False  # treescope renders it on a color of its class (Modules)
    _pytree__class_status: tp.ClassVar[dict[str, bool]] = {}
    _pytree__nodes: dict[tp.Any, bool]

    def __init_subclass__(cls, pytree: bool | None = None, **kwargs: tp.Any) -> None:
        super().__init_subclass__(**kwargs)
        if slots := getattr(cls, "__slots__", ()):
            raise TypeError(
                f"Pytree currently does not support __slots__, found __slots__={slots} in '{cls.__name__}'."
            )
        if pytree is not None:
            cls._pytree__is_pytree = pytree
        warn_deprecated_annotations(cls)
        status: dict[str, bool] = {}
        for klass in reversed(cls.__mro__):
            for name, annotation in inspect.get_annotations(klass).items():
                found = annotation_status(annotation)
                if found is not None:
                    status[name] = found
            for name, value in klass.__dict__.items():
                found = field_status(klass, name, value)
                if found is None:
                    continue
                if klass is cls and status.get(name, found) != found:
                    raise ValueError(
                        f"Conflicting pytree annotation for attribute '{cls.__name__}.{name}': previously "
                        f"registered as {'data' if status[name] else 'static'}, but found "
                        f"nnx.{'data' if found else 'static'}(...) annotation."
                    )
                status[name] = found
        cls._pytree__class_status = status
        if cls._pytree__is_pytree:
            jax.tree_util.register_pytree_with_keys(
                cls, _flatten_with_keys, lambda aux, children: _unflatten(cls, aux, children), _flatten
            )

    def __new__(cls, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        if (args or kwargs) and cls.__init__ is object.__init__:
            raise TypeError(f"{cls.__name__}() takes no arguments")
        obj = object.__new__(cls)
        object.__setattr__(obj, NODES, {})
        object.__setattr__(obj, TRACE_STATE, current_trace_state())
        return obj

    def __setattr__(self, name: str, value: tp.Any) -> None:
        self._setattr(name, value)

    def _setattr(self, name: tp.Any, value: tp.Any) -> None:
        """Assigns an attribute, deciding (or checking) whether it is data or static."""
        if isinstance(name, str) and name.startswith("_pytree__"):
            object.__setattr__(self, name, value)
            return
        _structure.touched(self)
        check_same_trace(self.__dict__.get(TRACE_STATE), f"'{type(self).__name__}' from different trace")
        nodes = self._pytree__nodes
        explicit: bool | None = None
        if isinstance(value, Marked):
            explicit, value = value.status, value.value
        cls = type(self)
        marked = cls._pytree__class_status.get(name)  # the class's mark: the status until the first assignment
        _check_no_nested_marks(self, name, value)
        if not cls._pytree__is_pytree:  # marks do not apply: its data is whatever holds data, as flax's
            status = is_data(value) or bool(has_data(value))
        elif explicit is not None:
            status = explicit
            if not status and has_data(value):
                raise ValueError(
                    f"Found data in value of type '{type(value)}' annotated with nnx.static(...) "
                    f"when setting attribute '{name}' of Pytree type '{cls}'."
                )
        elif name in nodes:
            status = nodes[name]
            if not status:
                if is_data(value):
                    raise ValueError(
                        f"Cannot assign data value of type '{type(value)}' to static attribute "
                        f"'{name}' of Pytree type '{cls}'. To override the status explicitly wrap "
                        f"the value with nnx.data on assignment:\n\n  _.{name} = nnx.data(...)\n\n"
                    )
                found = has_data(value)
                if found:
                    raise ValueError(_static_with_data_message(self, name, value, found))
        elif marked is not None:  # a data value keeps a static mark, as flax's; data inside one is refused
            status = marked
            if not status and not is_data(value) and (found := has_data(value)):
                raise ValueError(_static_with_data_message(self, name, value, found))
        else:
            status = is_data(value)
            if not status:
                found = has_data(value)
                if found:
                    raise ValueError(_static_with_data_message(self, name, value, found))
                status = bool(found)
        nodes[name] = status
        if isinstance(name, str):
            object.__setattr__(self, name, value)
        else:
            self.__dict__[name] = value

    def __delattr__(self, name: str) -> None:
        _structure.touched(self)
        object.__delattr__(self, name)
        self._pytree__nodes.pop(name, None)

    # -- introspection used by graphlib and reprs

    def _pytree__items(self) -> list[tuple[tp.Any, tp.Any]]:
        """The instance's attributes (internal ones excluded) in assignment order."""
        return [(k, v) for k, v in self.__dict__.items() if k != NODES and not _is_internal(k)]

    def __nnx_repr__(self, summarize: bool = True) -> str:
        name = type(self).__name__
        if id(self) in _REPR_GUARD.active:
            return f"{name}(...)"
        _REPR_GUARD.active.add(id(self))
        try:
            attributes = [
                (str(k), reprlib.value_repr(v, summarize)) for k, v in self._pytree__items() if not _hidden(k)
            ]
            return reprlib.object_repr(name, _variables_comment(self), attributes)
        finally:
            _REPR_GUARD.active.discard(id(self))

    def __repr__(self) -> str:
        return self.__nnx_repr__()

    def __treescope_repr__(self, path: str | None, subtree_renderer: tp.Callable[..., tp.Any]) -> tp.Any:
        """treescope's rendering: the attributes a repr shows (private ones only if data), as
        they are, the sizes of its Variables by type in the first line's comment; a Module
        (``_pytree__colored``) gets a background color of its class's name."""
        from treescope import formatting_util

        nodes = self._pytree__nodes
        shown = {k: v for k, v in self._pytree__items() if not _hidden(k) or nodes.get(k, False)}
        colored = type(self)._pytree__colored
        color = formatting_util.color_from_string(type(self).__qualname__) if colored else None
        return reprlib.treescope_constructor(
            type(self), shown, path, subtree_renderer, comment=_variables_comment(self), color=color
        )

    def __getstate__(self) -> dict[str, tp.Any]:
        return {k: v for k, v in self.__dict__.items() if k != TRACE_STATE}

    def __deepcopy__(self, memo: dict[int, tp.Any]) -> tp.Self:
        """A copy of the whole graph below this object (graphlib's ``deep_copy``); ``memo``
        does not reach inside it, as in flax."""
        assert _deep_copy is not None, "graphlib registers the deep copy on import"
        return _deep_copy(self)

    def __setstate__(self, state: dict[str, tp.Any]) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, TRACE_STATE, current_trace_state())


def _is_internal(key: tp.Any) -> bool:
    return isinstance(key, str) and key.startswith(INTERNAL_PREFIX)


def _hidden(key: tp.Any) -> bool:
    return isinstance(key, str) and key.startswith("_")


def _variable_group(variable: Variable[tp.Any]) -> str:
    """The name a Variable is totalled under in reprs: ``__nnx_repr_group__`` or its type's name."""
    return getattr(variable.type, "__nnx_repr_group__", None) or variable.type.__name__


def _variables_comment(node: Pytree) -> str:
    seen: set[int] = set()
    totals: dict[str, list[int]] = {}

    def visit(value: tp.Any) -> None:
        if id(value) in seen:
            return
        if isinstance(value, Variable):
            seen.add(id(value))
            size, nbytes = reprlib.size_and_bytes([value.get_raw_value()])
            if size:  # a Variable of no elements does not count, as in flax
                entry = totals.setdefault(_variable_group(value), [0, 0])
                entry[0] += size
                entry[1] += nbytes
        elif isinstance(value, Pytree):
            seen.add(id(value))
            for _key, child in sorted(value._pytree__items(), key=lambda item: _sort_key(item[0])):
                visit(child)
        elif isinstance(value, (list, tuple)):
            for child in value:
                visit(child)
        elif isinstance(value, tp.Mapping):
            for child in value.values():
                visit(child)

    visit(node)
    if not totals:
        return ""
    parts = [f"{name}: {reprlib.size_comment(*totals[name])}" for name in totals]
    if len(parts) > 1:
        size = sum(t[0] for t in totals.values())
        nbytes = sum(t[1] for t in totals.values())
        parts.append(f"Total: {reprlib.size_comment(size, nbytes)}")
    return ", ".join(parts)


def _getter(keys: tuple[tp.Any, ...]) -> tp.Callable[[dict[tp.Any, tp.Any]], tuple[tp.Any, ...]]:
    """A function of a dict returning the values at ``keys`` as a tuple (one C call)."""
    if not keys:
        return lambda values: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda values: (values[key],)
    return operator.itemgetter(*keys)


@dataclasses.dataclass(frozen=True, eq=False)
class _Layout:
    """An attribute layout: the keys sorted as flax orders them, with whether each is data,
    and getters of the data and static values (flattening runs on every transform call)."""

    data_keys: tuple[tp.Any, ...]
    static_keys: tuple[tp.Any, ...]
    keys: tuple[tuple[tp.Any, bool], ...]
    data_values: tp.Callable[[dict[tp.Any, tp.Any]], tuple[tp.Any, ...]]
    static_values: tp.Callable[[dict[tp.Any, tp.Any]], tuple[tp.Any, ...]]


_LAYOUTS: dict[tuple[tp.Any, ...], list[tuple[dict[tp.Any, bool], _Layout]]] = {}
"""The layouts seen, by the attribute names of an instance dict, each with the data flags
it was made for (the Modules of a model share a few layouts)."""


def attribute_layout(node: Pytree) -> _Layout:
    """The sorted data and static attribute keys of ``node`` (internal ones left out). An
    object that is no pytree (``pytree=False``) has data wherever its attributes hold it now,
    as flax's (a list it filled after assigning it is walked too)."""
    values = node.__dict__
    nodes = node._pytree__nodes
    if not type(node)._pytree__is_pytree:
        nodes = {k: nodes.get(k, False) or bool(has_data(v)) for k, v in values.items() if not _is_internal(k)}
    names = tuple(values)
    known = _LAYOUTS.get(names)
    if known is None:
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        known = _LAYOUTS[names] = []
    for flags, found in known:
        if flags == nodes:
            return found
    keys = sorted((k for k in values if not _is_internal(k)), key=_sort_key)
    flagged = tuple((k, nodes.get(k, False)) for k in keys)
    data_keys = tuple(k for k, data in flagged if data)
    static_keys = tuple(k for k, data in flagged if not data)
    found = _Layout(data_keys, static_keys, flagged, _getter(data_keys), _getter(static_keys))
    known.append((dict(nodes), found))
    return found


def _partition(node: Pytree) -> tuple[tuple[tp.Any, ...], tuple[tuple[tp.Any, tp.Any], ...]]:
    """The keys of the data attributes and the static ``(key, value)`` pairs, each sorted."""
    found = attribute_layout(node)
    return found.data_keys, tuple(zip(found.static_keys, found.static_values(node.__dict__)))


def _flatten_with_keys(node: Pytree) -> tuple[list[tuple[tp.Any, tp.Any]], tp.Any]:
    keys, statics = _partition(node)
    values = node.__dict__
    return [(_jax_key(k), values[k]) for k in keys], (keys, statics)


def _flatten(node: Pytree) -> tuple[tuple[tp.Any, ...], tp.Any]:
    found = attribute_layout(node)
    values = node.__dict__
    statics = tuple(zip(found.static_keys, found.static_values(values)))
    return found.data_values(values), (found.data_keys, statics)


def _unflatten(cls: type[Pytree], aux: tp.Any, children: tp.Iterable[tp.Any]) -> Pytree:
    """Rebuilds a Pytree: data attributes (sorted) first, then static ones (sorted), as flax orders them."""
    keys, statics = aux
    obj = object.__new__(cls)
    object.__setattr__(obj, NODES, {**dict.fromkeys(keys, True), **{k: False for k, _ in statics}})
    object.__setattr__(obj, TRACE_STATE, current_trace_state())
    obj.__dict__.update(zip(keys, children))
    obj.__dict__.update(statics)
    return obj


class Object(Pytree, pytree=False):
    """Base class for NNX objects that are not pytrees."""

    def __init_subclass__(cls, pytree: bool = False, **kwargs: tp.Any) -> None:
        if pytree is not False:
            raise ValueError(f"Object is not a pytree, but 'pytree' was explicitly set to {pytree!r} for type {cls}.")
        super().__init_subclass__(pytree=pytree, **kwargs)


def dataclass(
    cls: type[A] | None = None,
    /,
    *,
    init: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> tp.Any:
    """``dataclasses.dataclass`` for Pytree subclasses (fields use data/static annotations)."""

    def wrap(klass: type[A]) -> type[A]:
        return dataclasses.dataclass(  # type: ignore[call-overload, no-any-return]
            klass,
            init=init,
            repr=False,
            eq=eq,
            order=order,
            unsafe_hash=unsafe_hash,
            match_args=match_args,
            kw_only=kw_only,
            slots=slots,
            weakref_slot=weakref_slot,
        )

    return wrap if cls is None else wrap(cls)
