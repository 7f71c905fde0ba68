"""The flattened structure of a plain ``jit`` call, kept for the next call on the same objects.

Flattening a model is most of a plain call's cost, and between two training steps its
structure rarely changes: only the values of its Variables do. A :class:`CachedCall`
keeps, for the Pytrees a call received, where each leaf comes from (a Variable, or an
array held by a Pytree attribute) and watches those Pytrees (see :mod:`.._structure`).
A later call on the same objects, with no structural change since, reads the leaves
straight from their Variables. Per call it checks each Variable's metadata object and,
since an attribute can change without ``__setattr__`` (``object.__setattr__``,
``vars(m)[name] = ...``, ``__setstate__``), what each Pytree holds (:class:`Contents`).
A Variable given a value that is no longer one array (a tuple, None, a Ref) reaches
JAX as another structure or type, so the compiled function is traced anew, and that
trace refuses it: the call is then flattened.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import operator
import typing as tp
import weakref

import jax

from .. import _structure, graphlib
from ..pytreelib import Pytree, attribute_layout
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


def _data(node: Pytree) -> tuple[tp.Any, ...]:
    """The values of ``node``'s data attributes (the children of its flattening)."""
    return attribute_layout(node).data_values(vars(node))


def _no_data(_: tp.Any) -> tuple[tp.Any, ...]:
    return ()


@dataclasses.dataclass(eq=False)
class Contents:
    """What some objects held when a call was cached: their types, the keys of their
    mappings (a Pytree's attributes, a Variable's metadata) and, held so that no id is
    reused, the values bound to them. The first ``roots`` owners (a call's arguments:
    a cached argument must not outlive its caller) are not kept: :meth:`unchanged` is
    given them; the others are values of those, so keeping them keeps nothing alive
    longer. Any rebinding, addition or deletion, however made (``object.__setattr__``,
    ``vars(m)``, ``__setstate__``), makes the cached structure stale.

    A later call compares the values as JAX compares a treedef's auxiliary data (by
    identity, else by ``==``: a static attribute given an equal value changes nothing),
    and the values of data attributes, which the compiled function reads, by identity.
    The values are read with ``gc.get_referents`` (every value of a dict, in one call);
    owners whose values it does not list in full are not cached (see :meth:`of`).

    Where every change to a watched mapping counts (:data:`_structure.every_change_counted`;
    the owners' dicts are watched by :func:`_sources`), a call after no change to those dicts
    compares only :meth:`same_owners` (their classes and attribute dicts: what no dict reports)."""

    held: list[tp.Any]
    read: tp.Callable[[tp.Any], dict[tp.Any, tp.Any]]
    types: list[type]
    sizes: list[int]
    names: list[tp.Any]
    values: list[tp.Any]
    data: list[bool]  # which of ``values`` are data
    data_values: list[tp.Any]
    classes: list[type] | None  # each owner's class and attribute dict, as ``gc.get_referents`` lists them
    dicts: list[dict[tp.Any, tp.Any]] | None  # (None where it lists other objects)

    @classmethod
    def of(
        cls,
        owners: list[tp.Any],
        read: tp.Callable[[tp.Any], dict[tp.Any, tp.Any]] = vars,
        roots: int = 0,
        data: tp.Callable[[tp.Any], tuple[tp.Any, ...]] = _data,
    ) -> Contents | None:
        """The contents of ``owners``, whose mappings ``read`` gives (their attributes by
        default) and whose data values ``data`` gives; the first ``roots`` of them are not
        kept. None when ``gc.get_referents`` leaves out a value of theirs."""
        dicts = list(map(read, owners))
        values = gc.get_referents(*dicts)
        listed = set(map(id, values))
        if not all(id(v) in listed for v in itertools.chain.from_iterable(map(dict.values, dicts))):
            return None
        data_ids = set(map(id, itertools.chain.from_iterable(map(data, owners))))
        flags = [id(v) in data_ids for v in values]
        return cls(
            owners[roots:],
            read,
            list(map(type, owners)),
            list(map(len, dicts)),
            list(itertools.chain.from_iterable(dicts)),
            values,
            flags,
            list(itertools.compress(values, flags)),
            *(_classes_and_dicts(owners) if read is vars else (None, None)),
        )

    def same_owners(self, roots: tp.Sequence[tp.Any] = ()) -> bool:
        """Whether every owner (``roots``, then those kept) still has the same class and the
        same attribute dict, where every change to those dicts counts."""
        if self.dicts is None or not _structure.every_change_counted:
            return False
        now = gc.get_referents(*roots, *self.held)
        return now[1::2] == self.classes and all(map(operator.is_, now[0::2], self.dicts))

    def unchanged(self, roots: tp.Sequence[tp.Any] = ()) -> bool:
        """Whether every owner (``roots``, then those kept) still holds the same objects (or,
        outside its data, objects equal to them) under the same keys."""
        owners = [*roots, *self.held] if roots else self.held
        dicts = list(map(self.read, owners))
        values = gc.get_referents(*dicts)
        try:
            same = values == self.values
        except (ValueError, TypeError):  # an array compared with another (several elements, or a tracer)
            return False
        return (
            same
            and all(map(operator.is_, itertools.compress(values, self.data), self.data_values))
            and list(map(type, owners)) == self.types
            and list(map(len, dicts)) == self.sizes
            and list(itertools.chain.from_iterable(dicts)) == self.names
        )


def _classes_and_dicts(owners: list[tp.Any]) -> tuple[list[type], list[dict[tp.Any, tp.Any]]] | tuple[None, None]:
    """Each owner's class and attribute dict, where ``gc.get_referents`` lists just those
    (its attribute dict, then its class) for every owner; else None twice."""
    referents = gc.get_referents(*owners)
    expected = itertools.chain.from_iterable((vars(owner), type(owner)) for owner in owners)
    if len(referents) != 2 * len(owners) or not all(map(operator.is_, referents, expected)):
        return None, None
    return referents[1::2], referents[0::2]


def _argument(args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], where: Where) -> tp.Any:
    return args[where] if isinstance(where, int) else kwargs[where]


@dataclasses.dataclass(eq=False)
class CachedCall:
    """A call's flattened structure, for the same Pytree arguments (held weakly), static
    arguments and compiled function: valid while its Pytrees hold what they held and
    its Variables the same metadata. Checked in full (the Variables' metadata by content)
    when a change since ``epoch`` may have been made to one of its ``mappings`` or where
    changes made without ``__setattr__`` do not count (see :class:`Contents`); else only the
    owners' classes and attribute dicts and each Variable's metadata object are compared. A Variable given a value of
    another kind (a tuple, None, a Ref, a hijax Variable) is not checked here: JAX traces
    the compiled function anew for it, and the trace refuses it (``_tree_jit``)."""

    epoch: int
    arity: int
    keywords: tuple[str, ...]
    statics: Statics
    mode: graphlib.Mode
    objects: tuple[tuple[Where, weakref.ref[tp.Any], bool], ...]  # (argument, object, whether a Pytree)
    arguments: tuple[tuple[int, Where], ...]  # (leaf position, argument) of the leaf arguments
    sources: list[Variable[tp.Any] | _Held]
    metadata: list[tp.Any]
    contents: Contents
    metadata_contents: Contents
    jitted: tp.Callable[..., tp.Any]
    mappings: frozenset[int]  # the ids of the watched dicts (the owners' attributes, the metadata)
    written: dict[tuple[int, ...], list[Variable[tp.Any]]] = dataclasses.field(default_factory=dict)

    def targets(self, call: tp.Any, positions: tuple[int, ...]) -> list[Variable[tp.Any]]:
        """The Variables of ``call`` (a call of this structure) at ``positions`` among its nodes
        in flatten order, found on the first write to them."""
        found = self.written.get(positions)
        if found is None:
            nodes = nodes_of(call)
            found = self.written[positions] = [nodes[i] for i in positions]
        return found

    def leaves(
        self, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], statics: Statics, mode: graphlib.Mode
    ) -> list[tp.Any] | None:
        """The call's leaves, or None when the call differs in structure from the cached one."""
        if len(args) != self.arity or tuple(kwargs) != self.keywords or statics != self.statics or mode != self.mode:
            return None
        roots = []
        for where, ref, pytree in self.objects:
            arg = ref()
            if arg is not _argument(args, kwargs, where):
                return None
            if pytree:
                roots.append(arg)
        may_have_changed = not self.contents.same_owners(roots) or _structure.changed_since(self.epoch, self.mappings)
        if may_have_changed and not (self.contents.unchanged(roots) and self.metadata_contents.unchanged()):
            return None
        self.epoch = _structure.epoch
        if list(map(_METADATA, self.sources)) != self.metadata:
            return None
        leaves = list(map(_RAW, self.sources))
        for position, where in self.arguments:
            leaves[position] = _argument(args, kwargs, where)
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
    roots: list[Pytree] = []
    nested: list[Pytree] = []
    objects: list[tuple[Where, weakref.ref[tp.Any], bool]] = []
    arguments: list[tuple[int, Where]] = []
    for where in (*range(len(args)), *sorted(kwargs)):
        arg = _argument(args, kwargs, where)
        if isinstance(arg, (Pytree, Variable)):
            found = _sources(arg, nested)
            if found is None:
                return None
            sources.extend(found)
            pytree = isinstance(arg, Pytree)
            if pytree:
                roots.append(arg)
            objects.append((where, weakref.ref(arg, on_release), pytree))
        elif jax.tree_util.all_leaves([arg]):
            arguments.append((len(sources), where))
            sources.append(_ARGUMENT)
        else:
            return None
    metadata = list(map(_METADATA, sources))
    mappings = [m for m in metadata if m is not None]
    if not all(isinstance(m, dict) for m in mappings):
        return None  # a mapping whose changes no dict watcher reports
    for mapping in mappings:
        _structure.watch_mapping(mapping)
    contents = Contents.of([*roots, *nested], roots=len(roots))
    metadata_contents = Contents.of(mappings, dict, data=_no_data)
    if contents is None or metadata_contents is None:
        return None
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
        contents,
        metadata_contents,
        jitted,
        frozenset(map(id, [*(contents.dicts or ()), *mappings])),
    )


def _sources(tree: Pytree | Variable[tp.Any], nested: list[Pytree]) -> list[Variable[tp.Any] | _Held] | None:
    """Where each leaf of ``tree`` comes from, in flatten order, watching every Pytree on
    the way and appending those below ``tree`` to ``nested``; None when a node is neither a Pytree, a
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
    nested.extend(node for node in found if node is not tree)
    return sources


def _one_leaf(value: tp.Any) -> bool:
    leaves = jax.tree_util.tree_leaves(value)
    return len(leaves) == 1 and leaves[0] is value and not is_ref(value)
