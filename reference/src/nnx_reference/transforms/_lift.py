"""The machinery every NNX transform shares: graphs to pure trees and back.

A transform call goes through four steps:

1. :func:`lift`: the arguments are flattened with graph objects (Modules,
   Variables, ...) as leaves. In graph mode the objects are split jointly (so
   shared Variables are passed once) into a ``GraphDef`` and one ``State`` per
   :class:`Group` (object, filter of its prefix entry), or, when prefixes do not
   apply to objects, into one flat list of Variable values; in tree mode Modules
   and Variables stay ordinary pytrees. What depends only on structure is the
   hashable :class:`InStatic`, a static argument that JAX caches traces by.
2. inside the JAX transform, :func:`enter` rebuilds fresh copies of the objects.
3. after the user function, :func:`exit` turns the updated input objects and the
   output into a pure :class:`Result` again (the output's graph structure travels
   as the static pytree :class:`OutStatic`, which JAX caches with the trace).
4. outside, :func:`apply` writes the updates into the caller's objects and
   rebuilds the output, mapping copies of input objects back to the originals.
   When the inputs kept their structure, values are written Variable by Variable.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
from jax.tree_util import GetAttrKey

from .. import graphlib, statelib, variablelib
from .._tracing import inside_transformation
from . import _output_places as output_places
from . import _refs as refs
from . import _repeats as repeats
from ._checks import (
    CALL_ROOTS,
    Roots,
    check_consistent_aliasing,
    check_current_trace,
    check_current_trace_of_updated,
    check_no_aliasing,
    check_no_sharing,
    check_output_aliasing,
    has_shared_variables,
    key_paths,
    reached,
)
from ._groups import FLAT, Group, groups_for, split_groups
from ._hijax_trees import from_jax, to_jax
from ._metadata_writes import new_metadata, replace_metadata
from ._output_places import THIRD, Places
from ._trees import (
    Expand,
    Layout,
    ObjectStates,
    broadcast_prefix,
    is_node_leaf,
    is_object,
    is_variable,
    whole,
)

Path = tuple[tp.Hashable, ...]


def _ref_index(index_ref: dict[int, tp.Any]) -> graphlib.RefMap:
    """The inverse of ``index_ref``: each object to its index."""
    ref_index = graphlib.RefMap()
    for index, obj in index_ref.items():
        ref_index[obj] = index
    return ref_index


def _index_ref(ref_index: graphlib.RefMap) -> dict[int, tp.Any]:
    """The inverse of ``ref_index``: each index to its object."""
    return {index: ref_index.objects[key] for key, index in dict.items(ref_index)}


@dataclasses.dataclass(frozen=True)
class InStatic:
    """Everything about the inputs that depends only on structure (hashable)."""

    graph: bool
    graph_updates: bool
    treedef: jax.tree_util.PyTreeDef  # args flattened with objects as leaves
    obj_slots: tuple[int, ...]  # leaf positions of the objects
    graphdef: graphlib.GraphDef[tp.Any] | None = None  # graph mode: GraphDef of [objects, []]
    groups: tuple[Group, ...] = ()  # graph mode: one State per group
    obj_prefixes: tuple[tp.Any, ...] = ()  # the prefix entry of each object (when prefixes apply)
    roots: Roots = CALL_ROOTS  # how error messages name the parts of the inputs
    downgraded: bool = False  # graph mode without updates asked for, run as tree mode (no sharing)
    tree_input_paths: bool = False  # graph-mode errors name the inputs by jax key path all the same

    @property
    def asked_graph(self) -> bool:
        """Whether graph mode was asked for (its output may hold one Variable twice)."""
        return self.graph or self.downgraded


@dataclasses.dataclass(frozen=True)
class OutStatic:
    """The output's structure, produced while tracing and cached by JAX with it
    (a pytree without leaves)."""

    graphdef: graphlib.GraphDef[tp.Any] | None = None  # graph mode: of [input objects, output objects]
    out_groups: tuple[Group, ...] = ()
    unchanged: bool = False  # flat layout only: no output objects, input structure kept
    holes: bool = False  # the result holds ``refs.Hole``s for input Refs
    updated: tuple[int, ...] = ()  # tree mode: the input Variables the call gave new values
    metadata: tuple[tuple[int, tp.Any], ...] = ()  # tree mode: (input Variable, its new sorted metadata items)
    updated_paths: tuple[Path, ...] = ()  # graph mode without updates: where those Variables are
    aliases: tuple[repeats.Alias, ...] = ()  # graph mode downgraded to tree mode: a Variable returned twice
    places: Places = THIRD  # the keys of the Result's parts (see :mod:`.output_places`)


jax.tree_util.register_static(OutStatic)


class Result(tp.NamedTuple):
    """What a lifted function returns to JAX."""

    static: tp.Any  # an OutStatic (in a prefix tree of a Result: the entry for it)
    in_part: list[tp.Any]  # the updated inputs: one State per input group (or values, or Variables)
    out_tree: tp.Any  # the output, each graph object replaced by its ObjectStates


def _result_keys(result: Result) -> tuple[tp.Hashable, ...]:
    places = result.static.places if isinstance(result.static, OutStatic) else THIRD  # a prefix's entry
    return GetAttrKey("static"), places.updates, places.output


output_places.register(Result, _result_keys)


@dataclasses.dataclass(frozen=True)
class Lifted:
    """One call's lifted inputs: the pure values, their prefixes and the caller's objects."""

    static: InStatic
    pure: Layout  # what the JAX transform gets
    prefix: Layout  # the prefix entry of each item of ``pure``
    originals: list[tp.Any]  # the caller's objects (graph mode) or Variables (tree mode), in slot order
    variables: list[variablelib.Variable[tp.Any]] | None = (
        None  # flat layout: the caller's Variable of each value, if all are
    )
    outer_index: graphlib.RefMap | None = None  # graph mode: each of the caller's graph objects to its index

    def unwritten(self) -> Lifted:
        """This call as :func:`apply` must treat it when nothing may be written back (eval_shape)."""
        static = dataclasses.replace(self.static, graph_updates=False)
        return Lifted(static, refs.shapes_of_refs(self.pure), self.prefix, [])

    def in_prefix(self) -> list[tp.Any]:
        """The prefixes of :attr:`Result.in_part` (the updated inputs), as the inputs had them."""
        if self.static.graph:
            return self.prefix.states
        return [self.prefix.leaves[i] for i in self.static.obj_slots]


def lift(
    name: str,
    args: tp.Any,
    prefix: tp.Any,
    mode: graphlib.Mode,
    *,
    expand: Expand = whole,
    coalesce: bool = False,
    roots: Roots = CALL_ROOTS,
    tree_sharing: bool = False,
    tree_input_paths: bool = False,
) -> Lifted:
    """Lifts a call's arguments; ``prefix`` is a tree prefix of ``args`` (axes, shardings, ...).

    ``coalesce``: the prefix does not apply to objects; pass all their state as one.
    ``roots``: how error messages name the parts of ``args`` (an ``(args, kwargs)`` pair by default).
    ``tree_sharing``: tree mode takes a Variable held twice as two (flax's loops do), rather
    than refusing it. ``tree_input_paths``: graph-mode errors name input Variables by their
    jax key paths, as flax's ``eval_shape`` and ``make_jaxpr`` do.
    """
    graph, graph_updates = mode
    downgraded = graph and not graph_updates and not has_shared_variables(args)
    if downgraded:
        graph = False  # without sharing, graph mode without updates is tree mode
    objects = is_node_leaf if graph else is_variable
    leaves, treedef = jax.tree_util.tree_flatten(args, is_leaf=objects)
    prefixes = [None] * len(leaves) if coalesce else broadcast_prefix(prefix, args, objects)
    slots = tuple(i for i, leaf in enumerate(leaves) if objects(leaf))
    objs = [leaves[i] for i in slots]
    if not graph:
        if not tree_sharing and len({id(v) for v in objs}) != len(objs):
            check_no_sharing(name, args, roots)
        obj_prefixes = () if coalesce else tuple(prefixes[i] for i in slots)
        static = InStatic(
            False,
            False,
            treedef,
            slots,
            obj_prefixes=obj_prefixes,
            roots=roots,
            downgraded=downgraded,
            tree_input_paths=tree_input_paths,
        )
        return Lifted(static, to_jax(Layout(leaves, [])), Layout(prefixes, []), objs)
    if graph_updates:
        check_current_trace(name, objs)
    slot_set = set(slots)
    arg_leaves = [None if i in slot_set else v for i, v in enumerate(leaves)]
    if coalesce:
        return _lift_flat(graph_updates, arg_leaves, treedef, slots, objs, roots, tree_input_paths)
    obj_prefixes = tuple(prefixes[i] for i in slots)
    obj_roots = key_paths(args, objects, slots) if not graph_updates else [()] * len(objs)
    check_consistent_aliasing(reached(o, p, r) for o, p, r in zip(objs, obj_prefixes, obj_roots))
    groups = groups_for(objs, obj_prefixes, expand)
    outer_index = graphlib.RefMap()
    graphdef, states = split_groups(objs, [], groups, [], outer_index)
    static = InStatic(
        True,
        graph_updates,
        treedef,
        slots,
        graphdef,
        tuple(groups),
        obj_prefixes,
        roots,
        tree_input_paths=tree_input_paths,
    )
    arg_prefixes = [None if i in slot_set else p for i, p in enumerate(prefixes)]
    pure, prefix = to_jax(Layout(arg_leaves, states)), Layout(arg_prefixes, [g.prefix for g in groups])
    return Lifted(static, pure, prefix, objs, outer_index=outer_index)


def _lift_flat(
    graph_updates: bool,
    arg_leaves: list[tp.Any],
    treedef: jax.tree_util.PyTreeDef,
    slots: tuple[int, ...],
    objs: list[tp.Any],
    roots: Roots,
    tree_input_paths: bool,
) -> Lifted:
    """Graph mode, one group: the objects' Variables travel as a flat list of values."""
    outer_index = graphlib.RefMap()
    graphdef, variables = graphlib.flatten_into([objs, []], outer_index, with_paths=False)
    static = InStatic(
        True, graph_updates, treedef, slots, graphdef, (FLAT,), roots=roots, tree_input_paths=tree_input_paths
    )
    pure = Layout(arg_leaves, [_raw(v) for v in variables])
    prefix = Layout([None] * len(arg_leaves), [None] * len(variables))
    # leaves are Variables, or arrays held directly by a Pytree attribute
    all_variables = variables if all(map(is_variable, variables)) else None
    return Lifted(static, pure, prefix, objs, all_variables, outer_index)


class Entered(tp.NamedTuple):
    """What :func:`enter` rebuilt inside the transform."""

    args: tp.Any  # the arguments, with fresh copies of the objects
    objects: list[tp.Any]  # those copies, in slot order
    pure: Layout  # the pure inputs they came from (where exit looks up the input Refs)
    index_ref: dict[int, tp.Any]  # graph mode: each copy by the index its original has outside
    given: dict[int, tp.Any]  # graph mode without updates: each Variable copy's value as entered


def enter(static: InStatic, pure: Layout, index_ref: dict[int, tp.Any] | None = None) -> Entered:
    """Inside a transform: rebuild the arguments and their objects (those in ``index_ref``,
    by index, in place)."""
    index_ref = {} if index_ref is None else index_ref
    if static.groups == (FLAT,):
        leaves = list(pure.leaves)
        objs, _ = graphlib.unflatten_into(static.graphdef, list(pure.states), index_ref)
    else:
        # rebuilding the Variables here gives them the current trace level (JAX passes
        # non-differentiated inputs through untouched)
        copied = from_jax(jax.tree_util.tree_map(lambda x: x, pure, is_leaf=lambda x: x is None))
        leaves = list(copied.leaves)
        if static.graph:
            state = statelib.merge_state(*copied.states) if copied.states else statelib.State({})
            objs, _ = graphlib.unflatten_into(static.graphdef, state, index_ref)
        else:
            objs = [leaves[i] for i in static.obj_slots]
    given = {}
    if static.graph:
        for slot, obj in zip(static.obj_slots, objs):
            leaves[slot] = obj
        if not static.graph_updates:
            given = {id(v): v.get_raw_value() for _, v in _input_variables(objs)}
    return Entered(jax.tree_util.tree_unflatten(static.treedef, leaves), objs, pure, index_ref, given)


def _input_variables(objs: list[tp.Any]) -> tp.Iterator[tuple[Path, variablelib.Variable[tp.Any]]]:
    """The Variables of a call's input objects (each once) with their paths below them."""
    for path, value in graphlib.iter_graph(objs, graph=True):
        if is_variable(value):
            yield tuple(path), value


def exit(
    name: str,
    static: InStatic,
    entered: Entered,
    out: tp.Any,
    out_prefix: tp.Any = 0,
    expand: Expand = whole,
    same_prefixes: bool = True,
    carry_arg: int | None = None,
    donated: tp.Callable[[tp.Any], bool] | None = None,
) -> Result:
    """Inside a transform: the pure result of the call that :func:`enter` prepared.

    ``same_prefixes``: input and output prefixes are the same kind of thing (axes),
    so a Variable must get the same one on both sides. ``carry_arg``: tree-mode
    scan's carry argument (whose return as the carry scan has already checked).
    ``donated``: whether an input prefix entry donates its buffers (jit); without graph
    updates the Variables it covers are written back too, since their arrays are gone.

    The result's ``in_part`` holds the updated input objects (one entry per input
    group, so the input prefixes apply); its ``out_tree`` is the output with every
    graph object replaced by its :class:`ObjectStates` (so the user's output prefix
    applies). Input Refs in either are swapped for ``refs.Hole``s (JAX returns no Refs).
    """
    objs = list(entered.objects)
    ref_index = _ref_index(entered.index_ref)
    result = _exit(name, static, objs, ref_index, out, out_prefix, expand, same_prefixes, carry_arg)
    fresh = static.graph and static.graph_updates and bool(entered.objects)  # flax's condition, observed
    (in_part, out_tree), holes = refs.to_holes(to_jax((result.in_part, result.out_tree)), entered.pure, fresh)
    out_static = dataclasses.replace(
        result.static, holes=holes, places=output_places.places(name, static.graph, static.graph_updates)
    )
    if not static.graph:
        given = [entered.pure.leaves[slot] for slot in static.obj_slots]
        out_static = dataclasses.replace(
            out_static, updated=_updated(name, static, entered, donated), metadata=new_metadata(given, entered.objects)
        )
    elif not static.graph_updates:  # only the Variables given new values are written back, as flax's
        every = name in _WRITES_EVERY_VARIABLE or (
            donated is not None and any(donated(group.prefix) for group in static.groups)
        )
        updated = tuple(
            path for path, v in _input_variables(objs) if every or v.get_raw_value() is not entered.given.get(id(v))
        )
        out_static = dataclasses.replace(out_static, updated_paths=updated)
    return Result(out_static, in_part, out_tree)


_WRITES_EVERY_VARIABLE = ("cond", "switch", "scan")
"""Without graph updates, the transforms whose every input Variable counts as updated, as
flax writes each back: the branches of cond and switch must return the same static part,
and scan carries its inputs through every step."""


def _updated(
    name: str, static: InStatic, entered: Entered, donated: tp.Callable[[tp.Any], bool] | None
) -> tuple[int, ...]:
    """Tree mode: which input Variables the call gave new values, or donated."""
    if name in _WRITES_EVERY_VARIABLE:
        return tuple(range(len(entered.objects)))
    given = [entered.pure.leaves[slot].get_raw_value() for slot in static.obj_slots]
    gone = [donated is not None and donated(p) for p in static.obj_prefixes] or [False] * len(given)
    return tuple(
        i for i, (v, old, lost) in enumerate(zip(entered.objects, given, gone)) if lost or v.get_raw_value() is not old
    )


def _exit(
    name: str,
    static: InStatic,
    objs: list[tp.Any],
    ref_index: graphlib.RefMap,
    out: tp.Any,
    out_prefix: tp.Any,
    expand: Expand,
    same_prefixes: bool,
    carry_arg: int | None,
) -> Result:
    """The result of a traced call; graph objects keep the indices ``ref_index`` gives them."""
    if static.asked_graph and not static.graph_updates:
        check_output_aliasing(out, out_prefix)
    if not static.graph:
        check_no_aliasing(
            name,
            static.treedef,
            static.obj_slots,
            objs,
            out,
            carry_arg,
            static.roots,
            static.downgraded,
            input_graph_paths=not static.tree_input_paths,
        )
        aliases = repeats.repeats(out) if static.downgraded else ()
        return Result(OutStatic(aliases=aliases), [v.get_raw_value() for v in objs], out)
    if not static.graph_updates:
        check_no_aliasing(
            name,
            static.treedef,
            static.obj_slots,
            objs,
            out,
            roots=static.roots,
            graph_mode=True,
            input_graph_paths=not static.tree_input_paths,
        )
    if static.groups == (FLAT,):
        return _exit_flat(static, objs, ref_index, out)
    out_leaves, out_treedef = jax.tree_util.tree_flatten(out, is_leaf=is_node_leaf)
    out_prefixes = broadcast_prefix(out_prefix, out, is_node_leaf)
    slots = tuple(i for i, leaf in enumerate(out_leaves) if is_node_leaf(leaf))
    out_objs = [out_leaves[i] for i in slots]
    out_obj_prefixes = [out_prefixes[i] for i in slots]
    if same_prefixes:
        check_consistent_aliasing(
            reached(o, p) for o, p in [*zip(objs, static.obj_prefixes), *zip(out_objs, out_obj_prefixes)]
        )
    out_groups = groups_for(out_objs, out_obj_prefixes, expand)
    graphdef, states = split_groups(objs, out_objs, list(static.groups), out_groups, ref_index)
    n_in = len(static.groups)
    per_obj: list[list[tp.Any]] = [[] for _ in slots]
    for group, state in zip(out_groups, states[n_in:]):
        per_obj[group.obj].append(state)
    for slot, obj_states in zip(slots, per_obj):
        out_leaves[slot] = ObjectStates(tuple(obj_states))
    out_static = OutStatic(graphdef, tuple(out_groups))
    return Result(out_static, states[:n_in], jax.tree_util.tree_unflatten(out_treedef, out_leaves))


def _exit_flat(static: InStatic, objs: list[tp.Any], ref_index: graphlib.RefMap, out: tp.Any) -> Result:
    out_leaves, out_treedef = jax.tree_util.tree_flatten(out, is_leaf=is_node_leaf)
    slots = tuple(i for i, leaf in enumerate(out_leaves) if is_node_leaf(leaf))
    out_objs = [out_leaves[i] for i in slots]
    graphdef, variables = graphlib.flatten_into([objs, out_objs], ref_index, with_paths=False)
    # whether the inputs kept their structure: then values map 1:1 onto the caller's Variables
    unchanged = not out_objs and graphdef == static.graphdef
    for slot in slots:
        out_leaves[slot] = ObjectStates(())
    out_static = OutStatic(graphdef, (), unchanged)
    pure_out = jax.tree_util.tree_unflatten(out_treedef, out_leaves)
    return Result(out_static, [_raw(v) for v in variables], pure_out)


def holds_objects(out_tree: tp.Any) -> bool:
    """Whether a graph-mode :attr:`Result.out_tree` holds graph objects (as ObjectStates)."""
    return any(map(_is_object_states, jax.tree_util.tree_leaves(out_tree, is_leaf=_is_object_states)))


def _is_object_states(x: tp.Any) -> bool:
    return isinstance(x, ObjectStates)


def apply(lifted: Lifted, result: Result, write: bool = True) -> tp.Any:
    """Outside: write the updates into the caller's objects; return the output."""
    out_static, (in_part, out_tree) = result.static, from_jax((result.in_part, result.out_tree))
    if not write:
        lifted = lifted.unwritten()
    if out_static.holes:
        in_part, out_tree = refs.fill_holes((in_part, out_tree), lifted.pure)
    if not lifted.static.graph:
        updated = [(lifted.originals[i], in_part[i]) for i in out_static.updated] if lifted.originals else []
        if updated and inside_transformation():
            check_current_trace_of_updated([original for original, _ in updated])
        for original, new in updated:  # the others hold what the call was given
            _assign(original, new)
        for i, items in out_static.metadata if lifted.originals else ():
            replace_metadata(lifted.originals[i], items)
        return repeats.relink(out_tree, out_static.aliases) if out_static.aliases else out_tree
    written = _written(lifted, out_static)
    if out_static.unchanged and lifted.variables is not None:
        for variable, value in zip(lifted.variables, in_part):
            if written is None or id(variable) in written:
                variable.set_raw_value(value)
        return out_tree
    leaves, treedef = jax.tree_util.tree_flatten(out_tree, is_leaf=_is_object_states)
    slots = [i for i, leaf in enumerate(leaves) if _is_object_states(leaf)]
    if not slots and not lifted.originals:
        return out_tree  # nothing to write back, no object to rebuild
    structural = lifted.static.graph_updates and lifted.outer_index is not None
    # with graph updates the caller's objects are rebuilt in place from the new structure
    index_ref = _index_ref(lifted.outer_index) if structural else None
    if lifted.static.groups == (FLAT,):
        in_copies, out_objs = graphlib.unflatten_into(out_static.graphdef, list(in_part), index_ref)
    else:
        states = [*in_part, *(s for i in slots for s in leaves[i].states)]
        state = statelib.merge_state(*states) if states else statelib.State({})
        in_copies, out_objs = graphlib.unflatten_into(out_static.graphdef, state, index_ref)
    if not structural:
        mapping = _write_back(lifted.originals, in_copies, structural=False, written=written)
        out_objs = [mapping.get(id(obj), obj) for obj in out_objs]
    for slot, obj in zip(slots, out_objs):
        leaves[slot] = obj
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _written(lifted: Lifted, out_static: OutStatic) -> set[int] | None:
    """Graph mode without graph updates: the ids of the caller's Variables the call gave new
    values (under a JAX trace each must come from it); None with graph updates (all are)."""
    if lifted.static.graph_updates:
        return None
    paths = set(out_static.updated_paths)
    updated = [v for path, v in _input_variables(lifted.originals) if path in paths]
    if updated and inside_transformation():
        check_current_trace_of_updated(updated)
    return {id(v) for v in updated}


def caller_objects(lifted: Lifted) -> tp.Mapping[int, tp.Any]:
    """The caller's objects by index: its Variables in slot order (tree mode), or every graph
    object by its graph index (graph mode)."""
    if lifted.static.graph and lifted.outer_index is not None:
        return _index_ref(lifted.outer_index)
    return dict(enumerate(lifted.originals))


def apply_same(lifted: Lifted, pure: Layout) -> tp.Any:
    """Outside: the result has the inputs' own structure (loops); rebuild and write back.
    Without graph updates the graph nodes come back new, holding the caller's Variables;
    every one of them is written, so under a JAX trace each must come from it, as in flax."""
    if not lifted.static.graph_updates and inside_transformation():
        check_current_trace_of_updated([v for v in caller_objects(lifted).values() if is_variable(v)])
    if lifted.static.graph and not lifted.static.graph_updates and lifted.outer_index is not None:
        variables = {i: obj for i, obj in _index_ref(lifted.outer_index).items() if is_variable(obj)}
        return enter(lifted.static, pure, variables).args
    entered = enter(lifted.static, pure)
    value, copies = entered.args, entered.objects
    if not lifted.static.graph:
        for original, new in zip(lifted.originals, copies):
            _assign(original, new)
        leaves = list(pure.leaves)
        for slot, original in zip(lifted.static.obj_slots, lifted.originals):
            leaves[slot] = original
        return jax.tree_util.tree_unflatten(lifted.static.treedef, leaves)
    mapping = _write_back(lifted.originals, copies, structural=True)
    leaves = jax.tree_util.tree_leaves(value, is_leaf=is_node_leaf)
    for slot in lifted.static.obj_slots:
        leaves[slot] = mapping.get(id(leaves[slot]), leaves[slot])
    return jax.tree_util.tree_unflatten(lifted.static.treedef, leaves)


def _raw(leaf: tp.Any) -> tp.Any:
    return leaf.get_raw_value() if is_variable(leaf) else leaf


def _assign(original: variablelib.Variable[tp.Any], new: tp.Any) -> None:
    """Write a new value (hooks already ran where it was computed) into ``original``."""
    original.set_raw_value(new.get_raw_value() if is_variable(new) else new)


def _write_back(
    originals: list[tp.Any], copies: list[tp.Any], structural: bool, written: set[int] | None = None
) -> dict[int, tp.Any]:
    """Update the caller's objects from their copies of the same structure (by path when
    ``structural``, else Variable by Variable: those whose ids are in ``written``, if given);
    map copy ids to originals."""
    if structural:
        graphlib.update(originals, graphlib.state(copies, graph=True))
    orig_items = dict(_iter_objects(originals))
    mapping: dict[int, tp.Any] = {}
    for path, copy in _iter_objects(copies):
        original = orig_items.get(path)
        if original is None or type(original) is not type(copy):
            continue
        if is_variable(copy) and not structural and (written is None or id(original) in written):
            _assign(original, copy)
        mapping[id(copy)] = original
    return mapping


def _iter_objects(root: list[tp.Any]) -> tp.Iterator[tuple[Path, tp.Any]]:
    for path, value in graphlib.iter_graph(root, graph=True):
        if is_object(value) and path:
            yield tuple(path), value
