"""summary: ``tabulate``, a table of a model's calls and state.

The model's method runs once under ``nnx.eval_shape`` (nothing is computed) while
the method of every Module class involved is temporarily wrapped to record the
inputs and outputs of each call. Each called Module is one row; one column per
Variable type totals that Module's state. FLOPs, when asked for, come from XLA's
cost analysis of each call lowered on its own (forward, and forward plus
backward). ``summary_table`` draws the table with ``rich``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import textwrap
import typing as tp
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType

import jax
import numpy as np

from . import graphlib
from .module import Module
from .pytreelib import Pytree
from .reprlib import size_and_bytes, size_comment
from .rnglib import RngState, RngStream
from .summary_table import Table, draw
from .transforms import eval_shape
from .variablelib import Variable

__all__ = ["tabulate"]


@dataclasses.dataclass
class CallInfo:
    """One recorded method call: a row of the table."""

    call_order: int
    object_id: int
    type: type
    path: tuple[tp.Any, ...]
    inputs_repr: str
    outputs: tp.Any
    flops: int | None = None
    vjp_flops: int | None = None


def filter_rng_streams(row: CallInfo) -> bool:
    """The default row filter: hides calls of ``RngStream`` objects."""
    return not issubclass(row.type, RngStream)


# ---------------------------------------------------------------- value rendering


def _render(value: tp.Any) -> str:
    """A YAML-like rendering as rich markup (text is not escaped, as in flax): arrays as
    ``[dim]float32[/dim][1,32]`` (with the
    dtype JAX would give them), NumPy scalars as their ``repr``, classes as ``type[Param]``,
    sequences as ``- item`` lines, mappings as ``key: value`` lines (empty ones as ``[]`` and ``{}``),
    graph objects as ``Holder(...)``, anything else as its ``str``."""
    if isinstance(value, np.generic):
        return repr(value)
    if _is_array(value):
        dtype = jax.dtypes.canonicalize_dtype(value.dtype)
        return f"[dim]{np.dtype(dtype).name}[/dim][{','.join(str(d) for d in value.shape)}]"
    if isinstance(value, type):
        return f"type[{value.__name__}]"
    if isinstance(value, Pytree):
        return f"{type(value).__name__}(...)"
    if _is_sequence(value):
        return "\n".join(_item("- ", _render(v)) for v in value) or "[]"
    if isinstance(value, Mapping):
        return "\n".join(_entry(k, v) for k, v in sorted(value.items(), key=lambda kv: kv[0])) or "{}"
    return str(value)


def _is_sequence(value: tp.Any) -> bool:
    return isinstance(value, (list, tuple)) and not hasattr(value, "_fields")


def _entry(key: tp.Any, value: tp.Any) -> str:
    """One mapping entry in YAML's block style: a non-empty mapping below its key, indented
    two spaces; a non-empty sequence below its key, not indented; anything else after it."""
    text = _render(value)
    if isinstance(value, Mapping) and value:
        return f"{key}:\n" + textwrap.indent(text, "  ")
    if _is_sequence(value) and value:
        return f"{key}:\n{text}"
    return _item(f"{key}: ", text)


def _render_output(value: tp.Any) -> str:
    """An output as JAX returns it: Python and NumPy scalars become arrays."""
    return _render_top(
        jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(np.shape(leaf), jax.dtypes.result_type(leaf)), value)
    )


def _item(prefix: str, text: str) -> str:
    """``text`` after ``prefix``, its later lines aligned under its first."""
    return prefix + text.replace("\n", "\n" + " " * len(prefix))


def _render_inputs(args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any]) -> str:
    if len(args) == 1 and not kwargs:
        return _render_top(args[0])
    lines = [_item("- ", _render(a)) for a in _shown(args)]
    lines += [_entry(k, v) for k, v in sorted(_shown(kwargs).items())]
    return "\n".join(lines)


def _render_top(value: tp.Any) -> str:
    """A whole input or output: what :func:`_shown` keeps of it; ``None`` or an empty container as nothing."""
    empty = value is None or ((_is_sequence(value) or isinstance(value, Mapping)) and not value)
    return "" if empty else _render(_shown(value))


def _shown(value: tp.Any) -> tp.Any:
    """What flax's table shows of a value: all of it where it holds no leaf; otherwise the
    value rebuilt from its leaves (:func:`_rebuilt`), followed, for a sequence, by its items
    after the last one that holds a leaf, as they are."""
    if not jax.tree.leaves(value):
        return value
    shown = _rebuilt(value)
    if _is_sequence(value):
        return [*shown, *value[len(shown) :]]
    return shown


def _rebuilt(value: tp.Any, in_list: bool = False) -> tp.Any:
    """A value that holds leaves, as flax rebuilds it from their paths: a mapping without the
    entries that hold none, a sequence as a list up to the last item that holds one, with the
    earlier items that hold none emptied; so too a mapping whose kept keys are all integers,
    unless it is an item of such a list (``in_list``)."""
    if isinstance(value, Mapping):
        keys = [key for key, item in value.items() if jax.tree.leaves(item)]
        as_list = not in_list and all(isinstance(key, int) for key in keys)
        kept = {key: _rebuilt(value[key], in_list=as_list) for key in keys}
        return _as_list(kept, value) if as_list else kept
    if _is_sequence(value):
        kept = {i: _rebuilt(item, in_list=True) for i, item in enumerate(value) if jax.tree.leaves(item)}
        return _as_list(kept, dict(enumerate(value)))
    return value


def _as_list(kept: dict[int, tp.Any], original: Mapping[tp.Any, tp.Any]) -> list[tp.Any]:
    """Places 0 to the last kept key: the kept items, and between them the emptied originals."""
    return [kept[i] if i in kept else _emptied(original.get(i)) for i in range(max(kept) + 1)]


def _emptied(value: tp.Any) -> tp.Any:
    """An item that holds no leaf as rebuilding leaves it: an empty mapping or list, else None."""
    if isinstance(value, Mapping):
        return {}
    return [] if _is_sequence(value) else None


# ---------------------------------------------------------------- call recording


class Call(tp.NamedTuple):
    """A recorded call as FLOPs are estimated on it: the object's graph path, the method's
    name and its arguments, arrays as ShapeDtypeStructs."""

    path: tuple[tp.Any, ...]
    method: str
    args: tuple[tp.Any, ...]
    kwargs: dict[str, tp.Any]


def _abstract(value: tp.Any) -> tp.Any:
    if isinstance(value, (jax.Array, jax.core.Tracer)):
        return jax.ShapeDtypeStruct(value.shape, value.dtype)
    return value


def _inputs_key(args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any]) -> tuple[jax.tree_util.PyTreeDef, list[tp.Any]]:
    """What tells a call's inputs apart: their structure, and their leaves with arrays
    reduced to shape and dtype."""
    leaves, treedef = jax.tree.flatten((args, kwargs))
    return treedef, [
        (tuple(leaf.shape), leaf.dtype) if hasattr(leaf, "shape") and hasattr(leaf, "dtype") else leaf
        for leaf in leaves
    ]


def _public_methods(cls: type) -> dict[str, Callable[..., tp.Any]]:
    """``__call__`` and the public methods of ``cls`` (inherited ones included): the calls a
    summary records."""
    methods = {}
    for name in dir(cls):
        if name == "__call__" or not name.startswith("_"):
            attribute = inspect.getattr_static(cls, name)
            if inspect.isfunction(attribute):
                methods[name] = attribute
    return methods


@contextlib.contextmanager
def _recording(
    classes: set[type], paths: dict[int, tuple[tp.Any, ...]], calls: list[tuple[CallInfo, Call]]
) -> Iterator[None]:
    """Wraps the public methods of ``classes`` so that a call on a tracked object (``paths``
    maps object ids to graph paths) appends its CallInfo and inputs to ``calls``, as flax
    records them: in the order the calls start, the path ending with the method's name
    unless it is ``__call__``; a call that returns after another call on the same object
    with the same inputs (shapes, dtypes and other values), whatever its method, is not
    recorded."""
    returned: dict[int, list[tp.Any]] = {}
    originals = {(cls, name): method for cls in classes for name, method in _public_methods(cls).items()}

    def wrap(original: Callable[..., tp.Any]) -> Callable[..., tp.Any]:
        suffix = () if original.__name__ == "__call__" else (original.__name__,)

        @functools.wraps(original)
        def wrapper(self: tp.Any, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            if id(self) not in paths:
                return original(self, *args, **kwargs)
            order = len(calls)
            calls.append(None)  # type: ignore[arg-type]  # reserves the call's place
            out = original(self, *args, **kwargs)
            inputs = _inputs_key(args, kwargs)
            seen = returned.setdefault(id(self), [])
            if inputs in seen:
                return out
            seen.append(inputs)
            path = paths[id(self)]
            info = CallInfo(
                order, id(self), type(self), path + suffix, _render_inputs(args, kwargs), _render_output(out)
            )
            calls[order] = (info, Call(path, original.__name__, *jax.tree.map(_abstract, (args, kwargs))))
            return out

        return wrapper

    saved = {(cls, name): cls.__dict__.get(name, _INHERITED) for cls, name in originals}
    for (cls, name), original in originals.items():
        setattr(cls, name, wrap(original))
    try:
        yield
    finally:
        for (cls, name), original in saved.items():
            if original is _INHERITED:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


_INHERITED = object()


def _is_object(x: tp.Any) -> bool:
    return isinstance(x, Variable) or graphlib.is_graph_node(x)


def _is_traced(leaf: tp.Any) -> bool:
    """Whether an input of the call is traced: in graph mode arrays and graph objects only
    (Python and NumPy scalars stay as given, as flax's), in tree mode every leaf."""
    return not graphlib.resolve_graph(None) or _is_object(leaf) or isinstance(leaf, (jax.Array, np.ndarray))


def _record_calls(
    obj: tp.Any, method: str, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any]
) -> list[tuple[CallInfo, Call]]:
    calls: list[tuple[CallInfo, Call]] = []
    leaves, treedef = jax.tree.flatten((args, kwargs), is_leaf=_is_object)
    traced = [i for i, leaf in enumerate(leaves) if _is_traced(leaf)]

    def run(node: tp.Any, traced_leaves: list[tp.Any]) -> tp.Any:
        filled = list(leaves)
        for i, leaf in zip(traced, traced_leaves):
            filled[i] = leaf
        args, kwargs = jax.tree.unflatten(treedef, filled)
        paths: dict[int, tuple[tp.Any, ...]] = {}
        classes: set[type] = set()
        for path, value in graphlib.iter_graph(node):
            if isinstance(value, Module):
                paths.setdefault(id(value), tuple(path))
                classes.add(type(value))
        with _recording(classes, paths, calls):
            getattr(node, method)(*args, **kwargs)
        return None

    eval_shape(run, obj, [leaves[i] for i in traced])
    calls = [c for c in calls if c is not None]
    for info, _ in calls:
        if info.call_order == 0:  # the top call: show the arguments as given, not traced
            info.inputs_repr = _render_inputs(args, kwargs)
    return calls


# ---------------------------------------------------------------- FLOPs


def _cost(fn: Callable[..., tp.Any], node: tp.Any, call: Call) -> int:
    """The FLOPs XLA's cost analysis gives for ``fn(forward, state, arrays)``, where
    ``forward(state, arrays)`` makes ``call`` on ``node`` (its input arrays given as
    ``arrays``) and ``state`` is ``node``'s state."""
    graphdef, state = graphlib.split(node)
    leaves, treedef = jax.tree.flatten((call.args, call.kwargs))
    dynamic = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.ShapeDtypeStruct)]

    def forward(state: tp.Any, arrays: list[tp.Any]) -> tp.Any:
        filled = list(leaves)
        for i, array in zip(dynamic, arrays):
            filled[i] = array
        args, kwargs = jax.tree.unflatten(treedef, filled)
        return getattr(graphlib.merge(graphdef, state), call.method)(*args, **kwargs)

    analysis = (
        jax.jit(lambda state, arrays: fn(forward, state, arrays))
        .lower(state, [leaves[i] for i in dynamic])
        .cost_analysis()
    )
    return int(analysis.get("flops", 0)) if analysis else 0


def _forward(forward: Callable[..., tp.Any], state: tp.Any, arrays: list[tp.Any]) -> tp.Any:
    return forward(state, arrays)


def _forward_and_backward(forward: Callable[..., tp.Any], state: tp.Any, arrays: list[tp.Any]) -> tp.Any:
    """The call and its VJP with respect to the state and the input arrays, pulled back from its output."""
    out, pullback = jax.vjp(forward, state, arrays)
    return pullback(out)


def _vjp_flops(node: tp.Any, call: Call) -> int:
    """The FLOPs of ``call`` and its backward pass; like flax, refused for keyword arguments."""
    if call.kwargs:
        raise TypeError(
            f"tabulate(compute_vjp_flops=True) cannot estimate the VJP of {type(node).__name__}.{call.method} "
            f"called with keyword arguments {sorted(call.kwargs)}: they are not differentiated"
        )
    return _cost(_forward_and_backward, node, call)


# ---------------------------------------------------------------- state columns


def _type_name(variable: tp.Any) -> str:
    return "RngState" if isinstance(variable, RngState) else variable.type.__name__


def _variables(node: tp.Any) -> list[tuple[tuple[tp.Any, ...], tp.Any]]:
    """(path, Variable) pairs of ``node``'s state, each Variable once."""
    return [(tuple(p), v) for p, v in graphlib.iter_graph(node) if isinstance(v, Variable)]


class Size(tp.NamedTuple):
    """The element count and byte size of some arrays, as flax prints them (``6,070``, ``(24.3 KB)``)."""

    count: str
    nbytes: str

    @classmethod
    def of(cls, values: tp.Iterable[tp.Any]) -> Size:
        count, _, nbytes = size_comment(*size_and_bytes(values)).partition(" ")
        return cls(count, nbytes)

    def markup(self) -> str:
        """``6 [dim](24 B)[/dim]``: the footer's and the caption's (both bold by their style)."""
        return f"{self.count} [dim]{self.nbytes}[/dim]"

    def bold_markup(self) -> str:
        """``[bold]6 [/bold][bold dim](24 B)[/bold dim]``: a row's state total."""
        return f"[bold]{self.count} [/bold][bold dim]{self.nbytes}[/bold dim]"


def _is_array(value: tp.Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _shown_variable(variable: tp.Any) -> tp.Any:
    """What a row shows of one of its object's own Variables: its value as ``dtype[shape]``
    (nothing for a value that is not an array), under ``value`` beside its metadata (the
    keys every Variable has left out) when it has some."""
    value = variable.get_value()
    shown = _render(value) if _is_array(value) else ""
    metadata = variable.get_metadata(exclude_required=True)
    return {"value": shown, **metadata} if metadata else shown


def _state_cell(variables: list[tuple[tuple[tp.Any, ...], tp.Any]], in_row: bool) -> str:
    """In a row, the object's own Variables by name (:func:`_shown_variable`, those that show
    nothing left out), then the size (in bold); in the footer, the size."""
    if not variables:
        return ""
    size = Size.of(v.get_value() for _, v in variables)
    if not in_row:
        return size.markup()
    direct = {p[0]: _shown_variable(v) for p, v in variables if len(p) == 1}
    text = _render_top({name: shown for name, shown in direct.items() if shown != ""})
    total = size.bold_markup() if size.count != "0" else ""  # no total for Variables holding no array
    return f"{text}\n\n{total}" if text else total


def _nodes_by_path(obj: tp.Any) -> dict[tuple[tp.Any, ...], tp.Any]:
    """Every node of ``obj``'s graph by its (first) path, in one walk."""
    return {tuple(path): node for path, node in graphlib.iter_graph(obj)}


def tabulate(
    obj: tp.Any,
    *input_args: tp.Any,
    depth: int | None = None,
    method: str = "__call__",
    row_filter: Callable[[CallInfo], bool] = filter_rng_streams,
    table_kwargs: Mapping[str, tp.Any] = MappingProxyType({}),
    column_kwargs: Mapping[str, tp.Any] = MappingProxyType({}),
    console_kwargs: Mapping[str, tp.Any] = MappingProxyType({}),
    compute_flops: bool = False,
    compute_vjp_flops: bool = False,
    **input_kwargs: tp.Any,
) -> str:
    """Creates a summary of the graph object represented as a table.

    Columns: the path of each called object, its type, the inputs and outputs of
    its ``method`` call (as ``dtype[shape]``), the estimated FLOPs of the call
    (``compute_flops``) and of the call with its backward pass (``compute_vjp_flops``),
    then one column per Variable type with the object's state (its own Variables
    listed, then a ``count (bytes)`` total). A last row totals the state and a
    caption gives the grand total. ``depth`` limits the rows to paths at most that
    long. The table is rendered by ``rich`` (``table_kwargs`` go to its ``Table``,
    ``column_kwargs`` to each column, ``console_kwargs`` to its ``Console``) when it
    is installed, in plain text otherwise.
    """
    if not graphlib.is_node(obj) and not isinstance(obj, Variable):
        raise ValueError(f"Expected a graph node or Variable, got {type(obj)!r}.")
    nodes = _nodes_by_path(obj)
    calls: list[tuple[CallInfo, Call]] = []
    for info, call in _record_calls(obj, method, input_args, input_kwargs):
        if compute_flops:
            info.flops = _cost(_forward, nodes[call.path], call)
        if compute_vjp_flops:
            info.vjp_flops = _vjp_flops(nodes[call.path], call)
        if row_filter(info) and (depth is None or len(info.path) <= depth):
            calls.append((info, call))

    all_variables = _variables(obj)
    type_names = sorted({_type_name(v) for _, v in all_variables})

    def state_cells(node: tp.Any, in_row: bool) -> list[str]:
        variables = _variables(node)
        return [_state_cell([(p, v) for p, v in variables if _type_name(v) == name], in_row) for name in type_names]

    flops_columns = ["flops"] * compute_flops + ["vjp_flops"] * compute_vjp_flops

    def flops_cells(info: CallInfo) -> list[str]:
        return [str(info.flops)] * compute_flops + [str(info.vjp_flops)] * compute_vjp_flops

    header = ["path", "type", "inputs", "outputs", *flops_columns, *type_names]
    rows = [
        [
            "/".join(str(k) for k in c.path),
            c.type.__name__,
            c.inputs_repr,
            c.outputs,
            *flops_cells(c),
            *state_cells(nodes[call.path], in_row=True),
        ]
        for c, call in calls
    ]
    total_column = 3 + len(flops_columns)
    footer = [""] * total_column + ["Total", *state_cells(obj, in_row=False)]
    caption = f"Total Parameters: {Size.of(v.get_value() for _, v in all_variables).markup()}"
    table = Table(f"{type(obj).__name__} Summary", header, rows, footer, caption, total_column)
    return draw(table, table_kwargs, column_kwargs, console_kwargs)
