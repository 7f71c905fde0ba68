"""Plain-text reprs in the layout the NNX documentation prints.

Objects render as ``Name( # summary`` followed by one ``key=value`` line per
attribute, indented by two spaces per level; multi-line values (e.g. array reprs)
have their continuation lines shifted by the indentation of the line they start on.
"""

from __future__ import annotations

import typing as tp

import jax
import numpy as np

INDENT = "  "


def indent_tail(text: str, indent: str) -> str:
    """Shifts every line of ``text`` but the first by ``indent``."""
    return text.replace("\n", "\n" + indent)


def is_ref(value: tp.Any) -> bool:
    """Whether ``value`` is a mutable ``jax.Ref``."""
    return hasattr(jax, "Ref") and isinstance(value, jax.Ref)


def is_array(value: tp.Any) -> bool:
    """Whether ``value`` is a JAX or NumPy array (abstract or concrete) or an array Ref."""
    return isinstance(value, (jax.Array, np.ndarray, jax.ShapeDtypeStruct)) or is_ref(value)


def array_summary(value: tp.Any) -> str:
    """``Array(shape=(2, 3), dtype=dtype('float32'))``: the short form used inside modules."""
    name = "ArrayRef" if is_ref(value) else "Array"
    dtype = str(value.dtype) if _is_key(value) else repr(np.dtype(value.dtype))
    return f"{name}(shape={tuple(value.shape)}, dtype={dtype})"


def _is_key(value: tp.Any) -> bool:
    return bool(jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key))


def size_and_bytes(values: tp.Iterable[tp.Any]) -> tuple[int, int]:
    """Number of elements and bytes of the arrays among ``values``' leaves."""
    size = nbytes = 0
    for leaf in jax.tree.leaves(list(values)):
        if is_array(leaf) or isinstance(leaf, jax.core.Tracer):
            n = int(np.prod(leaf.shape))
            size += n
            nbytes += n * (8 if _is_key(leaf) else np.dtype(leaf.dtype).itemsize)
    return size, nbytes


def size_comment(size: int, nbytes: int) -> str:
    """``6 (24 B)`` with the byte count scaled as flax prints it."""
    return f"{size:,} ({_bytes(nbytes)})"


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n > scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} B"


def value_repr(value: tp.Any, summarize: bool) -> str:
    """Repr of an attribute value; large arrays are summarised when ``summarize``.

    Lists, tuples (namedtuples included) and dicts print inline, ``[a, b]`` /
    ``(a,)`` / ``{'k': v}``, with each item rendered by this function.
    """
    if summarize and is_array(value) and int(np.prod(value.shape)) > 1:
        if isinstance(value, jax.ShapeDtypeStruct):  # eval_shape's values print whole, as flax's
            return repr(value)
        return array_summary(value)
    if is_ref(value):
        return repr(value[...])
    if isinstance(value, type):
        return value.__name__
    if summarize and hasattr(value, "__nnx_repr__"):
        return value.__nnx_repr__(summarize=True)
    if isinstance(value, (list, tuple)):
        return _seq_repr(value, summarize)
    if isinstance(value, dict):
        items = ", ".join(f"{key!r}: {value_repr(item, summarize)}" for key, item in value.items())
        return "{" + items + "}"
    return repr(value)


def _seq_repr(value: tp.Sequence[tp.Any], summarize: bool) -> str:
    items = ", ".join(value_repr(item, summarize) for item in value)
    if isinstance(value, list):
        return f"[{items}]"
    return f"({items},)" if len(value) == 1 else f"({items})"


def mapping_repr(value: tp.Mapping[tp.Any, tp.Any], render: tp.Callable[[tp.Any], str]) -> str:
    """``{`` + one ``'key': value`` line per entry + ``}``, nested values indented."""
    if not value:
        return "{}"
    lines = ["{"]
    for key, item in value.items():
        lines.append(f"{INDENT}{key!r}: {indent_tail(render(item), INDENT)},")
    lines[-1] = lines[-1][:-1]
    return "\n".join([*lines, "}"])


def object_repr(name: str, comment: str, attributes: tp.Iterable[tuple[str, str]]) -> str:
    """``Name( # comment`` + ``key=value`` lines + ``)``; ``Name()`` when empty."""
    header = f"{name}(" + (f" # {comment}" if comment else "")
    lines = [f"{INDENT}{key}={indent_tail(text, INDENT)}," for key, text in attributes]
    if not lines:
        return f"{name}()"
    lines[-1] = lines[-1][:-1]
    return "\n".join([header, *lines, ")"])


def treescope_constructor(
    object_type: type,
    attributes: tp.Mapping[tp.Any, tp.Any],
    path: str | None,
    subtree_renderer: tp.Callable[..., tp.Any],
    *,
    comment: str = "",
    color: str | None = None,
) -> tp.Any:
    """treescope's rendering of an object as ``Type(name=value, ...)``, each value rendered
    by ``subtree_renderer``, with `` # comment`` closing the first line of the expanded node
    (how Variables and Pytrees render); treescope is imported only when it renders."""
    from treescope import rendering_parts as parts

    opening = parts.siblings(
        parts.roundtrip_condition(roundtrip=parts.text("<")), parts.maybe_qualified_type_name(object_type), "("
    )
    closing = parts.siblings(")", parts.roundtrip_condition(roundtrip=parts.text(">")))
    names = list(attributes)
    children = []
    for i, name in enumerate(names):
        if i + 1 < len(names):  # a comma after each but the last, and a space when folded
            separator = parts.siblings(",", parts.fold_condition(collapsed=parts.text(" ")))
        else:  # the last one's comma shows only when expanded
            separator = parts.fold_condition(expanded=parts.text(","))
        rendered = subtree_renderer(attributes[name], path=None if path is None else f"{path}.{name}")
        children.append(
            parts.build_full_line_with_annotations(parts.siblings_with_annotations(f"{name}=", rendered), separator)
        )
    return parts.build_foldable_tree_node_from_children(
        prefix=opening,
        children=children,
        suffix=closing,
        path=path,
        background_color=color,
        first_line_annotation=parts.comment_color(parts.text(f" # {comment}")) if comment else None,
    )
