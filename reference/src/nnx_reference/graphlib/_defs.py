"""The records a GraphDef is made of: one per node, Variable, leaf or static value.

Graph mode gives each Pytree and Variable an index in first-visit order; a second
visit is a :class:`NodeRef` / :class:`VariableRef` to that index. Tree mode keeps
one :class:`TreeDef`. All records are immutable and compared by structure.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import typing as tp
from collections.abc import Iterator

import jax

from ..variablelib import Variable
from ._nodes import Key, PathParts

_FOR_CACHES = contextvars.ContextVar("_FOR_CACHES", default=False)


@contextlib.contextmanager
def hashing_for_caches() -> Iterator[None]:
    """Within it, an unhashable static value hashes by its type and repr.

    A graphdef holding one has no ``hash()`` (``TypeError``, as flax's), yet the
    transforms' caches key on graphdefs; they hash inside this context."""
    token = _FOR_CACHES.set(True)
    try:
        yield
    finally:
        _FOR_CACHES.reset(token)


def hashing_leniently() -> bool:
    """Whether hashing happens inside :func:`hashing_for_caches`."""
    return _FOR_CACHES.get()


class StaticDef:
    """A static value inside a GraphDef, compared robustly and hashed as the value is."""

    __slots__ = ("value",)

    def __init__(self, value: tp.Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        try:
            return hash(self.value)
        except TypeError:
            if not hashing_leniently():
                raise
            return hash((type(self.value).__name__, repr(self.value)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StaticDef):
            return False
        if self.value is other.value:
            return True
        try:
            return type(self.value) is type(other.value) and bool(self.value == other.value)
        except Exception:  # noqa: BLE001 - a static value's == or bool() may raise anything
            return False

    def __repr__(self) -> str:
        return f"Static(value={self.value!r})"


@dataclasses.dataclass(frozen=True)
class LeafDef:
    """A state leaf (an array) at this position."""


LEAF = LeafDef()


@dataclasses.dataclass(frozen=True, eq=False)
class VariableDef:
    """A Variable seen for the first time: its type, index and metadata.

    ``metadata`` keeps the Variable's key order (restored by merge); equality and
    hashing ignore that order, which a merge or ``set_metadata`` can change.
    """

    type: type
    index: int
    metadata: tuple[tuple[str, StaticDef], ...]
    outer_index: int | None = None  # its index in the ``ref_outer_index`` of the flatten, if there

    def __post_init__(self) -> None:
        metadata = tuple(sorted(self.metadata, key=lambda item: item[0]))
        key = (self.type, self.index, metadata, self.outer_index)
        object.__setattr__(self, "_key", key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VariableDef) and self._key == other._key  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key)  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class ArrayRefDef:
    """An array Ref (``jax.new_ref``) seen for the first time: a state leaf with an identity."""

    index: int


@dataclasses.dataclass(frozen=True)
class VariableRef:
    """A Variable or array Ref already seen at ``index``."""

    index: int


@dataclasses.dataclass(frozen=True)
class NodeRef:
    """A Pytree already seen at ``index``."""

    type: type
    index: int


@dataclasses.dataclass(frozen=True)
class NodeDef:
    """A Pytree seen for the first time: type, index and ``(key, is_data, definition)`` per attribute (sorted)."""

    type: type
    index: int
    attributes: tuple[tuple[Key, bool, Definition], ...]  # a static attribute's definition is a StaticDef
    outer_index: int | None = None  # its index in the ``ref_outer_index`` of the flatten, if there


@dataclasses.dataclass(frozen=True)
class ContainerDef:
    """A list / tuple / dict / other JAX pytree container, rebuilt from ``treedef``."""

    treedef: jax.tree_util.PyTreeDef
    children: tuple[tuple[Key, Definition], ...]


class VariableTemplate(tp.NamedTuple):
    """What a tree-mode leaf that was a Variable wraps a plain value back into."""

    type: type[Variable[tp.Any]]
    metadata: tuple[tuple[str, tp.Any], ...]

    def wrap(self, value: tp.Any) -> tp.Any:
        """``value`` as a Variable of this type and metadata (a Variable is kept as it is)."""
        return value if isinstance(value, Variable) else self.type._new(value, dict(self.metadata))


@dataclasses.dataclass(frozen=True)
class TreeDef:
    """Tree mode: the ``PyTreeDef`` (Variables as leaves), the NNX path of each leaf and,
    for a leaf that was a Variable, its template (as flax's tree-mode definition keeps the
    Variable's type and metadata)."""

    treedef: jax.tree_util.PyTreeDef
    paths: tuple[PathParts, ...]
    templates: tuple[VariableTemplate | None, ...]


Definition = StaticDef | LeafDef | ArrayRefDef | VariableDef | VariableRef | NodeRef | NodeDef | ContainerDef
"""The definition of one position of a graph (graph mode)."""
RootDefinition = Definition | TreeDef
"""What a GraphDef holds at its root: a graph's definition, or a tree's."""


def def_repr(d: RootDefinition) -> str:
    """The definition as GraphDef's repr shows it."""
    if isinstance(d, NodeDef):
        attrs = ", ".join(f"{k!r}: {def_repr(c) if data else repr(c)}" for k, data, c in d.attributes)
        return f"NodeDef(type={d.type.__name__}, index={d.index}, attributes={{{attrs}}})"
    if isinstance(d, VariableDef):
        return f"VariableDef(type={d.type.__name__}, index={d.index})"
    if isinstance(d, ContainerDef):
        return f"ContainerDef({', '.join(f'{k!r}: {def_repr(c)}' for k, c in d.children)})"
    return repr(d)


def without_metadata(d: RootDefinition) -> RootDefinition:
    """``d`` with every Variable's metadata left out: the graph's shape, types and static values."""
    if isinstance(d, VariableDef):
        return dataclasses.replace(d, metadata=())
    if isinstance(d, NodeDef):
        attributes = tuple((k, data, without_metadata(c) if data else c) for k, data, c in d.attributes)
        return dataclasses.replace(d, attributes=attributes)
    if isinstance(d, ContainerDef):
        return dataclasses.replace(d, children=tuple((k, without_metadata(c)) for k, c in d.children))
    return d


def leaf_paths(d: RootDefinition, path: PathParts = ()) -> list[PathParts]:
    """The paths of the state leaves ``d`` describes, in flatten order."""
    if isinstance(d, TreeDef):
        return list(d.paths)
    if isinstance(d, (VariableDef, ArrayRefDef, LeafDef)):
        return [path]
    if isinstance(d, NodeDef):
        return [p for key, data, child in d.attributes if data for p in leaf_paths(child, (*path, key))]
    if isinstance(d, ContainerDef):
        return [p for key, child in d.children for p in leaf_paths(child, (*path, key))]
    return []


class RefMap(dict):  # type: ignore[type-arg]
    """A mapping keyed by object identity: object -> index (keeps the objects alive). It
    iterates over its objects; as a ``dict`` it is keyed by their ids (``dict.items``)."""

    def __init__(self, mapping: tp.Mapping[tp.Any, int] | tp.Iterable[tuple[tp.Any, int]] = (), /) -> None:
        super().__init__()
        self.objects: dict[int, tp.Any] = {}
        for obj, index in mapping.items() if isinstance(mapping, tp.Mapping) else mapping:
            self[obj] = index

    def __iter__(self) -> tp.Iterator[tp.Any]:
        return iter(self.objects.values())

    def keys(self) -> list[tp.Any]:  # type: ignore[override]
        return list(self.objects.values())

    def items(self) -> list[tuple[tp.Any, int]]:  # type: ignore[override]
        return [(obj, dict.__getitem__(self, key)) for key, obj in self.objects.items()]

    def get(self, obj: tp.Any, default: tp.Any = None) -> tp.Any:
        return dict.get(self, id(obj), default)

    def __contains__(self, obj: object) -> bool:
        return super().__contains__(id(obj))

    def __getitem__(self, obj: tp.Any) -> int:
        return super().__getitem__(id(obj))

    def __setitem__(self, obj: tp.Any, index: int) -> None:
        self.objects[id(obj)] = obj
        super().__setitem__(id(obj), index)

    def __delitem__(self, obj: tp.Any) -> None:
        del self.objects[id(obj)]
        super().__delitem__(id(obj))
