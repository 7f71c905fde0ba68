"""summary: ``tabulate``, a table of a model's calls and state, in plain text.

The model's method runs once under ``nnx.eval_shape`` (nothing is computed) while
the method of every Module class involved is temporarily wrapped to record the
inputs and outputs of each call. Each called Module is one row; one column per
Variable type totals that Module's state. The table is drawn with the same box
characters as ``rich`` tables, without terminal styling.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import typing as tp
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType

import numpy as np

from . import graphlib
from .module import Module
from .reprlib import size_and_bytes, size_comment
from .rnglib import RngState, RngStream
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
    """A YAML-like rendering: arrays as ``float32[1,32]``, sequences as ``- item``
    lines, mappings as ``key: value`` lines."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{np.dtype(value.dtype).name}[{','.join(str(d) for d in value.shape)}]"
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return "\n".join(_item("- ", _render(v)) for v in value)
    if isinstance(value, Mapping):
        return "\n".join(_item(f"{k}: ", _render(v)) for k, v in value.items())
    return repr(value)


def _item(prefix: str, text: str) -> str:
    pad = " " * len(prefix) if not prefix.startswith("- ") else "  "
    return prefix + text.replace("\n", "\n" + pad)


def _render_inputs(args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any]) -> str:
    if len(args) == 1 and not kwargs:
        return _render(args[0])
    lines = [_item("- ", _render(a)) for a in args]
    lines += [_item(f"{k}: ", _render(v)) for k, v in kwargs.items()]
    return "\n".join(lines)


# ---------------------------------------------------------------- call recording


@contextlib.contextmanager
def _recording(
    classes: set[type], method: str, paths: dict[int, tuple[tp.Any, ...]], calls: list[CallInfo]
) -> Iterator[None]:
    """Wraps ``method`` on ``classes`` so each outermost call on a tracked object
    (``paths`` maps object ids to graph paths) appends a CallInfo to ``calls``."""
    active: set[int] = set()
    saved: dict[type, tp.Any] = {}

    def wrap(original: Callable[..., tp.Any]) -> Callable[..., tp.Any]:
        @functools.wraps(original)
        def wrapper(self: tp.Any, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            if id(self) not in paths or id(self) in active:
                return original(self, *args, **kwargs)
            order = len(calls)
            calls.append(None)  # type: ignore[arg-type]  # reserves the call's place
            active.add(id(self))
            try:
                out = original(self, *args, **kwargs)
            finally:
                active.discard(id(self))
            calls[order] = CallInfo(
                order, id(self), type(self), paths[id(self)], _render_inputs(args, kwargs), _render(out)
            )
            return out

        return wrapper

    for cls in classes:
        if hasattr(cls, method):
            saved[cls] = cls.__dict__.get(method, _INHERITED)
            setattr(cls, method, wrap(getattr(cls, method)))
    try:
        yield
    finally:
        for cls, original in saved.items():
            if original is _INHERITED:
                delattr(cls, method)
            else:
                setattr(cls, method, original)


_INHERITED = object()


def _record_calls(
    obj: tp.Any, method: str, args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any]
) -> list[CallInfo]:

    calls: list[CallInfo] = []

    def run(node: tp.Any, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        paths: dict[int, tuple[tp.Any, ...]] = {}
        classes: set[type] = set()
        for path, value in graphlib.iter_graph(node):
            if isinstance(value, Module):
                paths.setdefault(id(value), tuple(path))
                classes.add(type(value))
        with _recording(classes, method, paths, calls):
            getattr(node, method)(*args, **kwargs)
        return None

    eval_shape(run, obj, *args, **kwargs)
    calls = [c for c in calls if c is not None]
    for call in calls:
        if call.path == ():  # the top call: show the arguments as given, not traced
            call.inputs_repr = _render_inputs(args, kwargs)
    return calls


# ---------------------------------------------------------------- state columns


def _type_name(variable: tp.Any) -> str:

    return "RngState" if isinstance(variable, RngState) else type(variable).__name__


def _variables(node: tp.Any) -> list[tuple[tuple[tp.Any, ...], tp.Any]]:
    """(path, Variable) pairs of ``node``'s state, each Variable once."""

    return [(tuple(p), v) for p, v in graphlib.iter_graph(node) if isinstance(v, Variable)]


def _state_cell(variables: list[tuple[tuple[tp.Any, ...], tp.Any]], list_direct: bool) -> str:
    """``name: dtype[shape]`` lines for direct attributes, then ``count (bytes)``."""

    if not variables:
        return ""
    total = size_comment(*size_and_bytes(v.get_value() for _, v in variables))
    direct = [f"{p[0]}: {_render(v.get_value())}" for p, v in variables if len(p) == 1]
    if list_direct and direct:
        return "\n".join(direct) + "\n\n" + total
    return total


def _nodes_by_path(obj: tp.Any) -> dict[tuple[tp.Any, ...], tp.Any]:
    """Every node of ``obj``'s graph by its (first) path, in one walk."""

    return {tuple(path): node for path, node in graphlib.iter_graph(obj)}


# ---------------------------------------------------------------- drawing


def _draw(title: str, header: list[str], rows: list[list[str]], footer: list[str], caption: str) -> str:
    """A table drawn like ``rich``'s default box (heavy head, a rule between rows)."""
    columns = list(zip(header, *rows, footer))
    widths = [max(len(line) for cell in col for line in (cell.split("\n") or [""])) for col in columns]

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def line(cells: list[str], edge: str, right_align_last: int | None = None) -> list[str]:
        split = [c.split("\n") for c in cells]
        height = max(len(s) for s in split)
        out = []
        for i in range(height):
            parts = []
            for j, (s, w) in enumerate(zip(split, widths)):
                text = s[i] if i < len(s) else ""
                parts.append(" " + (text.rjust(w) if j == right_align_last else text.ljust(w)) + " ")
            out.append(edge + edge.join(parts) + edge)
        return out

    total_width = sum(widths) + 3 * len(widths) + 1
    out = [title.center(total_width).rstrip(), rule("┏", "┳", "┓", "━"), *line(header, "┃")]
    out.append(rule("┡", "╇", "┩", "━"))
    for row in rows:
        out += line(row, "│")
        out.append(rule("├", "┼", "┤", "─"))
    out += line(footer, "│", right_align_last=3)
    out.append(rule("└", "┴", "┘", "─"))
    out += ["", caption.center(total_width).rstrip()]
    return "\n".join(out) + "\n"


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
    its ``method`` call (as ``dtype[shape]``), then one column per Variable type
    with the object's state (its own Variables listed, then a ``count (bytes)``
    total). A last row totals the state and a caption gives the grand total.
    ``depth`` limits the rows to paths at most that long. The ``rich`` styling
    options (``table_kwargs``, ``column_kwargs``, ``console_kwargs``) are accepted
    but have no effect on this plain-text table.
    """
    if compute_flops or compute_vjp_flops:
        raise NotImplementedError("tabulate does not estimate FLOPs in this implementation.")
    calls = [c for c in _record_calls(obj, method, input_args, input_kwargs) if row_filter(c)]
    if depth is not None:
        calls = [c for c in calls if len(c.path) <= depth]

    all_variables = _variables(obj)
    type_names = sorted({_type_name(v) for _, v in all_variables})

    def state_cells(node: tp.Any, list_direct: bool) -> list[str]:
        variables = _variables(node)
        return [
            _state_cell([(p, v) for p, v in variables if _type_name(v) == name], list_direct)
            for name in type_names
        ]

    header = ["path", "type", "inputs", "outputs", *type_names]
    nodes = _nodes_by_path(obj)
    rows = [
        ["/".join(str(k) for k in c.path), c.type.__name__, c.inputs_repr, c.outputs,
         *state_cells(nodes[c.path], list_direct=True)]
        for c in calls
    ]
    footer = ["", "", "", "Total", *state_cells(obj, list_direct=False)]

    grand_total = size_comment(*size_and_bytes(v.get_value() for _, v in all_variables))
    title = f"{type(obj).__name__} Summary"
    return _draw(title, header, rows, footer, f"Total Parameters: {grand_total}")
