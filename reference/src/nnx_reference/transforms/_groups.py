"""The slices a transform's lifted state is split into: one :class:`Group` per object and
prefix entry (axis, Carry, ...), split jointly from the inputs and outputs."""

from __future__ import annotations

import dataclasses
import typing as tp

from .. import filterlib, graphlib, statelib
from ._trees import Expand

Path = tuple[tp.Hashable, ...]


@dataclasses.dataclass(frozen=True)
class Group:
    """A slice of the lifted state that shares one prefix entry (axis, Carry, ...)."""

    obj: int  # index of the object among the lifted objects
    filter: filterlib.Filter  # filter within the object, ``...`` for all of it
    prefix: tp.Any  # the prefix entry that applies to this slice


FLAT = Group(-1, ..., None)  # a single group: every Variable's value, in a flat list


def in_group(side: int, obj: int, flt: filterlib.Filter) -> tp.Callable[[Path, tp.Any], bool]:
    """A filter selecting one object's slice within ``[in_objs, out_objs]``."""
    pred = filterlib.to_predicate(flt)

    def predicate(path: Path, value: tp.Any) -> bool:
        return len(path) >= 2 and path[0] == side and path[1] == obj and pred(path[2:], value)

    return predicate


def groups_for(objs: tp.Sequence[tp.Any], prefixes: tp.Sequence[tp.Any], expand: Expand) -> list[Group]:
    """Groups for each object; ``expand(prefix, obj)`` gives ``[(filter, prefix)]``."""
    return [Group(i, flt, p) for i, (obj, prefix) in enumerate(zip(objs, prefixes)) for flt, p in expand(prefix, obj)]


class Split(tp.NamedTuple):
    """``[in_objs, out_objs]`` split jointly: the GraphDef and one State per group."""

    graphdef: graphlib.GraphDef[tp.Any]
    states: list[tp.Any]


def split_groups(
    in_objs: list[tp.Any],
    out_objs: list[tp.Any],
    in_groups: list[Group],
    out_groups: list[Group],
    ref_index: graphlib.RefMap,
) -> Split:
    """Split ``[in_objs, out_objs]`` jointly into one State per group; objects already
    in ``ref_index`` keep their index, the others are added to it."""
    filters = [in_group(0, g.obj, g.filter) for g in in_groups]
    filters += [in_group(1, g.obj, g.filter) for g in out_groups]
    graphdef, flat = graphlib.flatten_into([in_objs, out_objs], ref_index)
    groups = statelib.split_flat(flat, filters, exhaustive=True) if filters else []
    return Split(graphdef, [statelib.from_flat_state(g) for g in groups])
