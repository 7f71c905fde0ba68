"""The flattened structure of a plain ``jit`` call, kept for the next call on the same objects.

Flattening a model is most of a plain call's cost, and between two training steps its
structure rarely changes: only the values of its Variables do. A :class:`CachedCall`
keeps, for the Pytrees a call received, where each leaf comes from (a Variable, or an
array held by a Pytree attribute) and watches those Pytrees (see :mod:`.._structure`).
A later call on the same objects, with no structural change since, reads the leaves
straight from their Variables. Per call it checks what a change of values alone could
change in the structure: each leaf's type (a Variable given a tuple, or a Ref, no
longer holds one array) and each Variable's metadata object; and, since an attribute
can change without ``__setattr__`` (``object.__setattr__``, ``vars(m)[name] = ...``,
``__setstate__``), what each Pytree holds (:class:`Contents`).
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import typing as tp
import weakref

import jax

from .. import _structure, graphlib
from ..pytreelib import Pytree
from ..reprlib import is_ref
from ..variablelib import Variable
from ._statics import Statics

Where = int | str
"""An argument: its position, or its keyword."""


class _Held:
    """A leaf read from a Pytree attribute, or a leaf argument's place: what it gives
    for the leaves and the metadata (none) that the check of a call compares."""

    __slots__ = ("_raw_value", "_var_metadata")

    def __init__(self, value: tp.Any) -> None:
        self._raw_value = value
        self._var_metadata = None


_RAW = operator.attrgetter("_raw_value")
_METADATA = operator.attrgetter("_var_metadata")
_ARGUMENT = _Held(None)


def _itself(mapping: dict[str, tp.Any]) -> dict[str, tp.Any]:
    return mapping


@dataclasses.dataclass(eq=False)
class Contents:
    """What some objects held when a call was cached: their types, the keys of their
    mappings (a Pytree's attributes, a Variable's metadata) and, held so that no id is
    reused, the values bound to them (the owners themselves are held weakly: a cached
    argument must not outlive its caller). A later call compares them by identity: any
    rebinding, addition or deletion, however made (``object.__setattr__``, ``vars(m)``,
    ``__setstate__``), makes the cached structure stale."""

    owners: list[weakref.ref[tp.Any]]
    read: tp.Callable[[tp.Any], dict[str, tp.Any]]
    types: list[type]
    sizes: list[int]
    names: list[str]
    values: list[tp.Any]

    @classmethod
    def of(cls, owners: list[tp.Any], read: tp.Callable[[tp.Any], dict[str, tp.Any]] = vars) -> Contents:
        """The contents of ``owners``, whose mappings ``read`` gives (their attributes by default)."""
        dicts = list(map(read, owners))
        return cls(
            list(map(weakref.ref, owners)),
            read,
            list(map(type, owners)),
            list(map(len, dicts)),
            list(itertools.chain.from_iterable(dicts)),
            list(itertools.chain.from_iterable(map(dict.values, dicts))),
        )

    def unchanged(self) -> bool:
        """Whether every owner still holds the very objects it held, under the same keys."""
        owners = list(map(operator.call, self.owners))
        if not all(map(operator.is_not, owners, itertools.repeat(None))):  # one was collected
            return False
        dicts = list(map(self.read, owners))
        return (
            list(map(type, owners)) == self.types
            and list(map(len, dicts)) == self.sizes
            and list(itertools.chain.from_iterable(dicts)) == self.names
            and all(map(operator.is_, itertools.chain.from_iterable(map(dict.values, dicts)), self.values))
        )


def _argument(args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], where: Where) -> tp.Any:
    return args[where] if isinstance(where, int) else kwargs[where]


@dataclasses.dataclass(eq=False)
class CachedCall:
    """A call's flattened structure, for the same Pytree arguments (held weakly), static
    arguments and compiled function: valid while its Pytrees hold what they held and
    its Variables the same metadata. Checked in full (the Variables' metadata by content)
    when :data:`_structure.epoch` has moved since ``epoch``."""

    epoch: int
    arity: int
    keywords: tuple[str, ...]
    statics: Statics
    mode: graphlib.Mode
    objects: tuple[tuple[Where, weakref.ref[tp.Any]], ...]
    arguments: tuple[tuple[int, Where], ...]  # (leaf position, argument) of the leaf arguments
    sources: list[Variable[tp.Any] | _Held]
    metadata: list[tp.Any]
    types: list[type]
    contents: Contents
    metadata_contents: Contents
    jitted: tp.Callable[..., tp.Any]
    variables: list[Variable[tp.Any] | None] | None = None  # by node position, found on the first write

    def nodes(self, call: tp.Any) -> list[Variable[tp.Any] | None]:
        """The Variables of ``call`` (a call of this structure) by position among its nodes."""
        if self.variables is None:
            self.variables = [x if isinstance(x, Variable) else None for x in nodes_of(call)]
        return self.variables

    def leaves(
        self, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], statics: Statics, mode: graphlib.Mode
    ) -> list[tp.Any] | None:
        """The call's leaves, or None when the call differs in structure from the cached one."""
        if len(args) != self.arity or tuple(kwargs) != self.keywords or statics != self.statics or mode != self.mode:
            return None
        for where, ref in self.objects:
            if ref() is not _argument(args, kwargs, where):
                return None
        if not self.contents.unchanged():
            return None
        leaves = list(map(_RAW, self.sources))
        for position, where in self.arguments:
            leaves[position] = _argument(args, kwargs, where)
        if list(map(type, leaves)) != self.types or list(map(_METADATA, self.sources)) != self.metadata:
            return None
        if self.epoch != _structure.epoch:  # a structural change somewhere: this one's metadata may have changed
            if not self.metadata_contents.unchanged():
                return None
            self.epoch = _structure.epoch
        return leaves


def nodes_of(tree: tp.Any) -> list[tp.Any]:
    """Every node of ``tree`` (containers, objects, leaves) in flatten order."""
    nodes: list[tp.Any] = []
    jax.tree_util.tree_flatten(tree, is_leaf=nodes.append)
    return nodes


def identities(args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any]) -> tuple[int, ...]:
    """The ids of a call's Pytree and Variable arguments."""
    return tuple(id(x) for x in (*args, *kwargs.values()) if isinstance(x, (Pytree, Variable)))


def cache_call(
    args: tuple[tp.Any, ...],
    kwargs: dict[str, tp.Any],
    statics: Statics,
    mode: graphlib.Mode,
    jitted: tp.Callable[..., tp.Any],
    on_release: tp.Callable[[tp.Any], None],
) -> CachedCall | None:
    """The structure of a call that the flat path has just run, or None when it holds
    anything that could change without a Pytree attribute changing (a list, a dict, a
    custom pytree) or is not one of Pytrees, Variables and leaves. ``on_release`` is called
    when a Pytree or Variable argument is garbage collected (the cache must not keep a model's arrays alive)."""
    sources: list[Variable[tp.Any] | _Held] = []
    pytrees: list[Pytree] = []
    objects: list[tuple[Where, weakref.ref[tp.Any]]] = []
    arguments: list[tuple[int, Where]] = []
    for where in (*range(len(args)), *sorted(kwargs)):
        arg = _argument(args, kwargs, where)
        if isinstance(arg, (Pytree, Variable)):
            found = _sources(arg, pytrees)
            if found is None:
                return None
            sources.extend(found)
            objects.append((where, weakref.ref(arg, on_release)))
        elif jax.tree_util.all_leaves([arg]):
            arguments.append((len(sources), where))
            sources.append(_ARGUMENT)
        else:
            return None
    leaves = list(map(_RAW, sources))
    for position, where in arguments:
        leaves[position] = _argument(args, kwargs, where)
    metadata = list(map(_METADATA, sources))
    return CachedCall(
        _structure.epoch,
        len(args),
        tuple(kwargs),
        statics,
        mode,
        tuple(objects),
        tuple(arguments),
        sources,
        metadata,
        list(map(type, leaves)),
        Contents.of(pytrees),
        Contents.of([m for m in metadata if m is not None], _itself),
        jitted,
    )


def _sources(tree: Pytree | Variable[tp.Any], pytrees: list[Pytree]) -> list[Variable[tp.Any] | _Held] | None:
    """Where each leaf of ``tree`` comes from, in flatten order, watching every Pytree on
    the way and appending it to ``pytrees``; None when a node is neither a Pytree, a
    Variable of one leaf, a tuple, None nor a leaf."""
    nodes: list[tp.Any] = []

    def record(x: tp.Any) -> bool:
        nodes.append(x)
        return isinstance(x, Variable)

    items = jax.tree_util.tree_leaves(tree, is_leaf=record)
    ends = set(map(id, items))
    found: list[Pytree] = []
    for node in nodes:
        if id(node) in ends:
            continue
        if isinstance(node, Pytree):
            found.append(node)
        elif node is not None and type(node) is not tuple:
            return None
    sources: list[Variable[tp.Any] | _Held] = []
    for item in items:
        if isinstance(item, Variable):
            raw = item.get_raw_value()
            if not _one_leaf(raw):
                return None
            sources.append(item)
        elif is_ref(item):
            return None
        else:
            sources.append(_Held(item))
    for node in found:
        _structure.watch(node)
    pytrees.extend(found)
    return sources


def _one_leaf(value: tp.Any) -> bool:
    leaves = jax.tree_util.tree_leaves(value)
    return len(leaves) == 1 and leaves[0] is value and not is_ref(value)
