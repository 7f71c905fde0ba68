"""Where flax's traced functions put each part of what they return to JAX.

JAX names an output of no JAX type by its key path in what the traced function
returned ("... at output component [2]['a'], which is not a valid JAX type"). The
containers the transforms return to JAX (:class:`lift.Result`, the fast ``jit``
path's outcome, ``scan``'s stacked outputs) key their parts by the places flax's
traced functions give the same parts, so such an error names the same component:

- graph mode with graph updates: the updates first (``[0]``), the output third
  (``[2]``), in ``cond``, ``switch`` and ``remat`` second (``[1]``);
- tree mode, or no graph updates: the output first (``[0]``), the updates second;
- ``eval_shape``: the output itself (its container adds nothing to the path).
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
from jax.tree_util import SequenceKey


@dataclasses.dataclass(frozen=True)
class Unnamed:
    """A key that adds nothing to a key path: for a container flax's output does not have."""

    def __str__(self) -> str:
        return ""


UNNAMED = Unnamed()


@dataclasses.dataclass(frozen=True)
class Places:
    """The keys of the user's output and of the updated inputs (a pytree without leaves)."""

    output: tp.Hashable
    updates: tp.Hashable


jax.tree_util.register_static(Places)

THIRD = Places(SequenceKey(2), SequenceKey(0))
"""Graph mode with graph updates: the output after two parts (``jit``, ``checkify``, ``scan``)."""

_SECOND = Places(SequenceKey(1), SequenceKey(0))
_FIRST = Places(SequenceKey(0), SequenceKey(1))
_ITSELF = Places(UNNAMED, SequenceKey(1))

_SECOND_IN = frozenset({"cond", "switch", "remat"})


def places(name: str, graph: bool, graph_updates: bool) -> Places:
    """Where the transform ``name`` puts the output and the updates in this mode, as flax's does."""
    if name == "eval_shape":
        return _ITSELF
    if not (graph and graph_updates):
        return _FIRST
    return _SECOND if name in _SECOND_IN else THIRD


_NamedTuple = tp.TypeVar("_NamedTuple", bound=tuple)


def register(cls: type[_NamedTuple], keys: tp.Callable[[_NamedTuple], tuple[tp.Hashable, ...]]) -> None:
    """Registers the NamedTuple ``cls`` as a pytree of its fields in order, each keyed by
    what ``keys`` gives it for an instance (one key per field)."""

    def flatten(x: _NamedTuple) -> tuple[tuple[tp.Any, ...], None]:
        return tuple(x), None

    def flatten_with_keys(x: _NamedTuple) -> tuple[tuple[tuple[tp.Hashable, tp.Any], ...], None]:
        return tuple(zip(keys(x), x)), None

    def unflatten(_: None, children: tp.Iterable[tp.Any]) -> _NamedTuple:
        return cls(*children)

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)


class PathKey(tp.NamedTuple):
    """The key of a leaf that stands for its whole path in the output it was taken from."""

    path: jax.tree_util.KeyPath

    def __str__(self) -> str:
        return jax.tree_util.keystr(self.path)


@dataclasses.dataclass
class Leaves:
    """Leaves taken out of an output, each keyed by its path there (the paths are static)."""

    values: list[tp.Any]
    paths: tuple[jax.tree_util.KeyPath, ...]


jax.tree_util.register_pytree_with_keys(
    Leaves,
    lambda x: (tuple(zip(map(PathKey, x.paths), x.values)), x.paths),
    lambda paths, values: Leaves(list(values), paths),
    lambda x: (x.values, x.paths),
)
