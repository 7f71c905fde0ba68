"""The error checks of the transforms: sharing, aliasing, prefixes that need graph mode."""

from __future__ import annotations

import typing as tp

import jax

from .. import graphlib, variablelib
from .._tracing import check_same_trace, current_trace_state, inside_transformation
from ..errors import TraceContextError
from ..reprlib import is_ref
from ._prefix import VariablePrefix
from ._trees import broadcast_prefix, is_node_leaf, is_variable


def _variables_of(obj: tp.Any, every_path: bool) -> tp.Iterator[tuple[tuple, variablelib.Variable]]:
    if is_variable(obj):
        yield (), obj
    elif every_path:
        for keypath, leaf in jax.tree_util.tree_flatten_with_path(obj, is_leaf=is_variable)[0]:
            if is_variable(leaf):
                yield tuple(graphlib.jax_key(k) for k in keypath), leaf
    else:
        for path, value in graphlib.iter_graph(obj, graph=True):
            if is_variable(value):
                yield tuple(path), value


def variable_prefixes(
    obj: tp.Any, prefix: tp.Any, every_path: bool = False
) -> tp.Iterator[tuple[tuple, tp.Any, tp.Any]]:
    """``(path, variable, prefix value)`` for each Variable of ``obj``: once per Variable,
    walking its graph, or with ``every_path`` once per path ``jax.tree`` takes to it (a
    shared Variable several times, none inside a Module that is no pytree)."""
    for path, var in _variables_of(obj, every_path):
        value = prefix.map_prefix(path, var) if isinstance(prefix, VariablePrefix) else prefix
        yield path, var, value


class Reached(tp.NamedTuple):
    """A Variable as one occurrence of an object reaches it: where, and the prefix it gets."""

    path: tuple  # below the root the error names it under
    variable: variablelib.Variable
    prefix: tp.Any

    def __str__(self) -> str:
        """As flax's aliasing error lists it: the path joined with slashes (``<root>`` for an
        empty one), then the prefix."""
        return f"{'/'.join(map(str, self.path)) or '<root>'}: {self.prefix}"


def reached(obj: tp.Any, prefix: tp.Any, root: tuple = ()) -> list[Reached]:
    """The Variables of ``obj`` (each once) with their prefix values and paths below ``root``."""
    return [Reached((*root, *path), var, value) for path, var, value in variable_prefixes(obj, prefix)]


def check_consistent_aliasing(occurrences: tp.Iterable[list[Reached]]) -> None:
    """A Variable reached several times must get the same prefix every time.

    ``occurrences``: what each occurrence of an object reaches, in order; the error comes
    after the first occurrence that disagrees and lists each Variable that disagrees with
    where it was reached up to there.
    """
    seen: dict[int, list[Reached]] = {}
    mismatched: set[int] = set()
    for occurrence in occurrences:
        reached_here: set[int] = set()
        for entry in occurrence:
            key = id(entry.variable)
            if key in reached_here or key in mismatched:
                continue
            reached_here.add(key)
            entries = seen.setdefault(key, [])
            entries.append(entry)
            if entries[0].prefix != entry.prefix:
                mismatched.add(key)
        if mismatched:
            nodes = "\n".join(  # in the order the Variables were first reached, as flax's
                f"Node: {type(entries[0].variable).__name__}\n" + "\n".join(f"  {e}" for e in entries)
                for key, entries in seen.items()
                if key in mismatched
            )
            raise ValueError(f"Inconsistent aliasing detected. The following nodes have different prefixes:\n{nodes}")


def check_output_aliasing(out: tp.Any, out_prefix: tp.Any) -> None:
    """Graph mode without graph updates: a Variable the output holds twice must get one
    output prefix, named as flax's error names it, by its path in the output (``0/a``)."""
    leaves = jax.tree_util.tree_leaves(out, is_leaf=is_node_leaf)
    slots = tuple(i for i, leaf in enumerate(leaves) if is_node_leaf(leaf))
    if len(slots) < 2:
        return
    prefixes = broadcast_prefix(out_prefix, out, is_node_leaf)
    roots = key_paths(out, is_node_leaf, slots)
    check_consistent_aliasing(reached(leaves[i], prefixes[i], root) for i, root in zip(slots, roots))


def key_paths(args: tp.Any, is_leaf: tp.Callable[[tp.Any], bool], slots: tuple[int, ...]) -> list[tuple]:
    """The path in ``args`` of each leaf at ``slots``: where flax's aliasing errors without
    graph updates name an object's Variables from (``0/1/...``: the second positional argument)."""
    paths = [keypath for keypath, _ in jax.tree_util.tree_flatten_with_path(args, is_leaf=is_leaf)[0]]
    return [tuple(graphlib.jax_key(k) for k in paths[i]) for i in slots]


def _variable_paths(
    tree: tp.Any, root: str, graph_paths: bool = False
) -> tp.Iterator[tuple[str, variablelib.Variable]]:
    """Each Variable of ``tree`` with its path under ``root``: a ``jax.tree`` key path, or with
    ``graph_paths`` as flax writes graph mode's (a graph node's ``.__state__`` then its graph
    path, ``.args[0].__state__['lin']['kernel']``), each Variable once per node."""
    if not graph_paths:
        for keypath, leaf in jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_variable)[0]:
            if is_variable(leaf):
                yield root + jax.tree_util.keystr(keypath), leaf
        return
    for keypath, node in jax.tree_util.tree_flatten_with_path(tree, is_leaf=graphlib.is_graph_node)[0]:
        if not graphlib.is_graph_node(node):
            continue
        base = root + jax.tree_util.keystr(keypath) + ".__state__"
        for path, value in graphlib.iter_graph(node, graph=True):
            if is_variable(value):
                yield base + "".join(f"[{key!r}]" for key in path), value


def _duplicate_error(name: str, variable: tp.Any, paths: list[str]) -> ValueError:
    listed = "\n".join(f"  - {p}" for p in paths)
    return ValueError(
        f"Duplicate {variable!r}\nfound at paths:\n\n{listed}\n\n"
        f"nnx.{name} with graph_updates=False does not support Variable aliasing "
        "(duplicate inputs, duplicate outputs, or input Variables returned as outputs). "
        "Consider the following options:\n\n"
        "1. Remove the duplicate Variables.\n"
        "2. Create new Variables via nnx.clone() and use those instead.\n"
        "3. Enable graph mode and graph updates by passing graph=True and "
        f"graph_updates=True to {name}\n\n"
        f"  nnx.{name}(..., graph=True, graph_updates=True)\n\n"
        f"4. Use nnx.compat.{name} (sets graph and graph_updates to True automatically)\n\n"
        f"  nnx.compat.{name}(...)"
    )


Roots = tuple[str, ...]
"""How error paths name a transform's inputs: one root per part of the inputs, as flax names
them (``.args`` and ``.kwargs`` of a call, jvp's ``.primals``, cond's ``.operands``, ...); a
single root names the inputs as a whole."""

CALL_ROOTS: Roots = (".args", ".kwargs")


def _input_paths(
    args: tp.Any, roots: Roots, graph_paths: bool = False
) -> tp.Iterator[tuple[str, variablelib.Variable]]:
    parts = [(roots[0], args)] if len(roots) == 1 else zip(roots, args)
    for root, part in parts:
        yield from _variable_paths(part, root, graph_paths)


def has_shared_variables(args: tp.Any) -> bool:
    variables = [x for x in jax.tree_util.tree_leaves(args, is_leaf=is_variable) if is_variable(x)]
    return len({id(v) for v in variables}) != len(variables)


def check_no_sharing(name: str, args: tp.Any, roots: Roots = CALL_ROOTS) -> None:
    """Tree mode: a Variable may appear only once among the arguments (named by ``roots``)."""
    seen: dict[int, str] = {}
    for path, var in _input_paths(args, roots):
        if id(var) in seen:
            raise _duplicate_error(name, var, [seen[id(var)], path])
        seen[id(var)] = path


def check_no_aliasing(
    name: str,
    treedef: tp.Any,
    obj_slots: tuple[int, ...],
    objs: list,
    out: tp.Any,
    carry_arg: int | None = None,
    roots: Roots = CALL_ROOTS,
    graph_mode: bool = False,
    input_graph_paths: bool = True,
) -> None:
    """Without graph updates, the output may not contain input Variables (nor, in tree mode,
    one Variable twice; ``graph_mode`` also writes the paths as flax's graph mode does, the
    inputs' only with ``input_graph_paths``).

    The inputs are the objects ``objs`` at ``obj_slots`` of the arguments' ``treedef``.
    ``carry_arg``: the position of scan's carry argument, reported as ``.carry``
    (the carry returned as the carry is checked by scan and left out of ``out``).
    """
    leaves: list = [None] * treedef.num_leaves
    for slot, obj in zip(obj_slots, objs):
        leaves[slot] = obj
    check_outputs_are_new(
        name,
        jax.tree_util.tree_unflatten(treedef, leaves),
        out,
        carry_arg,
        graph_mode,
        roots,
        graph_paths=graph_mode,
        input_graph_paths=graph_mode and input_graph_paths,
    )


def check_outputs_are_new(
    name: str,
    args: tp.Any,
    out: tp.Any,
    carry_arg: int | None = None,
    shared_outputs: bool = False,
    roots: Roots = CALL_ROOTS,
    *,
    graph_paths: bool,
    input_graph_paths: bool,
) -> None:
    """The output may hold neither a Variable of the arguments ``args`` nor, unless
    ``shared_outputs``, one Variable twice (``carry_arg`` as for :func:`check_no_aliasing`,
    ``graph_paths`` and, for the inputs, ``input_graph_paths`` as for :func:`_variable_paths`)."""
    inputs = input_variables(args, carry_arg, roots, graph_paths=input_graph_paths)
    check_outputs_are_not(name, inputs, out, shared_outputs, graph_paths=graph_paths)


def input_variables(
    args: tp.Any, carry_arg: int | None = None, roots: Roots = CALL_ROOTS, *, graph_paths: bool
) -> dict[int, str]:
    """The Variables of the arguments ``args`` by id, each with its first path: what
    :func:`check_outputs_are_not` refuses to find in an output (taken before a call, the
    Variables the function was given, not those it left its inputs holding)."""
    carry_root = f"{roots[0]}[{carry_arg}]"
    inputs: dict[int, str] = {}
    for path, var in _input_paths(args, roots, graph_paths):
        if carry_arg is not None and path.startswith(carry_root):
            path = ".carry" + path[len(carry_root) :]
        inputs.setdefault(id(var), path)
    return inputs


def check_outputs_are_not(
    name: str, inputs: dict[int, str], out: tp.Any, shared_outputs: bool = False, *, graph_paths: bool
) -> None:
    """The output may hold none of the Variables ``inputs`` (from :func:`input_variables`)
    nor, unless ``shared_outputs``, one Variable twice."""
    seen: dict[int, str] = {}
    for path, var in _variable_paths(out, ".out", graph_paths):
        first = inputs.get(id(var)) or seen.get(id(var))
        if first is not None:
            raise _duplicate_error(name, var, [first, path])
        if not shared_outputs:
            seen[id(var)] = path


def check_carry_identity(carry_in: tp.Any, carry_out: tp.Any) -> list[int]:
    """Tree-mode scan: the carry returned must hold the carry's own Variables in place.

    Returns the positions of the Variables among the carry's leaves (Variables as leaves).
    """
    in_leaves, in_def = jax.tree_util.tree_flatten(carry_in, is_leaf=is_variable)
    out_leaves, out_def = jax.tree_util.tree_flatten(carry_out, is_leaf=is_variable)
    if in_def != out_def:
        has_variables = any(map(is_variable, in_leaves))
        raise (ValueError if has_variables else TypeError)(
            ("pytree structure error: " if has_variables else "")
            + "scan body function carry input and carry output must have the same pytree "
            f"structure, but they differ: the carry input has structure {in_def} and the "
            f"carry output has structure {out_def}"
        )
    found = []
    for position, (old, new) in enumerate(zip(in_leaves, out_leaves)):
        if is_variable(old):
            if new is not old:
                raise ValueError("scan Variable identity must be preserved across iterations.")
            found.append(position)
        elif is_variable(new):
            raise TypeError(
                "scan body function carry input and carry output must have the same pytree "
                f"structure, but they differ: the carry input at leaf {position} is a "
                f"{type(old)} but the carry output is a {type(new)}"
            )
    return found


def reject_prefix_objects(name: str, prefix: tp.Any, kind: type, mode: graphlib.Mode, argname: str) -> None:
    """Prefix objects (StateAxes, DiffState, ...) need graph mode with graph updates."""
    if mode == (True, True):
        return
    found = jax.tree_util.tree_leaves(prefix, is_leaf=lambda x: isinstance(x, kind))
    if any(isinstance(x, kind) for x in found):
        kind_name = kind.__name__
        raise ValueError(
            f"`{argname}` cannot contain `{kind_name}` objects when `graph=False` or "
            "`graph_updates=False`. Consider the following options:\n\n"
            f"1. Remove `{kind_name}` objects from `{argname}`.\n"
            "2. Enable graph mode and graph updates by passing graph=True and "
            f"graph_updates=True to {name} e.g.\n\n"
            f"  nnx.{name}(..., graph=True, graph_updates=True)\n\n"
            f"3. Use nnx.compat.{name} instead e.g.\n\n"
            f"  nnx.compat.{name}(...)"
        )


def reject_variable_prefixes(name: str, argname: str, prefix: tp.Any) -> None:
    """A prefix (shardings, axes) may not hold Variables: it names a prefix for a whole Variable."""
    paths, _ = jax.tree_util.tree_flatten_with_path(prefix, is_leaf=is_variable)
    for path, leaf in paths:
        if is_variable(leaf):
            raise ValueError(
                f"Found Variable of type {type(leaf).__name__} at path {jax.tree_util.keystr(path)} in "
                f"`{argname}` for nnx.{name}. Variables prefixes are not supported."
                "Pass a prefix for the entire Variable instead of passing a Variable with a prefix for its value."
            )


_EXTRACTING = frozenset({"grad", "value_and_grad", "vmap", "pmap", "scan", "shard_map"})
"""Transforms that reject another trace's Variable as they take the graph apart (ValueError)."""
_WRITING = frozenset({"jit", "remat", "cond", "switch", "while_loop", "fori_loop", "checkify"})
"""Transforms that reject it as a Variable they would write (TraceContextError)."""


def check_current_trace(name: str, objs: list[tp.Any]) -> None:
    """With graph updates under a JAX trace (a raw ``jax.jit``, ...), the objects' Variables
    must come from that trace: updates cannot be written to a Variable of an outer one."""
    if (name not in _EXTRACTING and name not in _WRITING) or not inside_transformation():
        return
    current = current_trace_state()
    for _, node in graphlib.iter_graph(objs, graph=True):
        if not is_variable(node) or is_ref(node.get_raw_value()):
            continue
        if node.__dict__.get("_trace_state", current) != current:
            if name in _EXTRACTING:
                raise ValueError(f"Cannot extract graph node from different trace level, got {node!r}")
            raise TraceContextError(f"Cannot mutate {type(node).__name__} from a different trace level")


def check_current_trace_of_updated(variables: list[variablelib.Variable[tp.Any]]) -> None:
    """Without graph updates under a JAX trace, the Variables a transform updated must come
    from that trace, or it would write its values into another trace's Variables."""
    for variable in variables:
        if not is_ref(variable.get_raw_value()):
            check_same_trace(variable.__dict__.get("_trace_state"), f"{type(variable).__name__} from a different trace")
