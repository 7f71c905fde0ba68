"""How a Pytree attribute is marked data or static: :func:`data` / :func:`static` on
assignment or as class-level dataclass fields, and the deprecated ``Data[...]`` /
``Static[...]`` annotations (objects, or the strings ``from __future__ import
annotations`` leaves). :mod:`pytreelib` applies them."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing as tp
import warnings

A = tp.TypeVar("A")
_STATUS_KEY = "nnx_pytree_status"


class _Marker:
    """The annotation marker that ``Data[...]`` / ``Static[...]`` carry."""

    def __init__(self, status: bool) -> None:
        self.status = status

    def __repr__(self) -> str:
        return "DATA" if self.status else "STATIC"


DATA_MARKER, STATIC_MARKER = _Marker(True), _Marker(False)
Data = tp.Annotated[A, DATA_MARKER]
Static = tp.Annotated[A, STATIC_MARKER]


@dataclasses.dataclass(frozen=True)
class Marked:
    """A value returned by :func:`data` / :func:`static`, to be assigned to an attribute."""

    value: tp.Any
    status: bool


def _marked(value: tp.Any, status: bool, kwargs: dict[str, tp.Any]) -> tp.Any:
    """``value`` marked with ``status``, or with no value a dataclass field of the options in
    ``kwargs`` (its ``metadata`` may not name ``static``, which the status sets)."""
    name = "nnx.data" if status else "nnx.static"
    if value is not _MISSING:
        if kwargs:
            raise TypeError(f"{name}() accepts either a single positional argument or keyword arguments, but not both.")
        return Marked(value, status)
    metadata = kwargs.pop("metadata", None) or {}
    if "static" in metadata:
        raise ValueError(f"Cannot use 'static' key in metadata argument for {name}.")
    return dataclasses.field(metadata={**metadata, _STATUS_KEY: status}, **kwargs)


_MISSING: tp.Any = object()


def data(value: tp.Any = _MISSING, /, **kwargs: tp.Any) -> tp.Any:
    """Annotates an attribute as pytree data (on assignment, or as a class-level field)."""
    return _marked(value, True, kwargs)


def static(value: tp.Any = _MISSING, /, **kwargs: tp.Any) -> tp.Any:
    """Annotates an attribute as static (on assignment, or as a class-level field)."""
    return _marked(value, False, kwargs)


def annotation_status(annotation: tp.Any) -> bool | None:
    """True for an ``nnx.Data`` annotation, False for ``nnx.Static``, else None."""
    if isinstance(annotation, str):
        return _string_status(annotation)
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, _Marker):
            return meta.status
    return None


_MARKER_NAMES = {"Data": True, "nnx.Data": True, "Static": False, "nnx.Static": False}


def _string_status(annotation: str) -> bool | None:
    """A string annotation (as ``from __future__ import annotations`` leaves them) names a
    marker where it is ``Data`` or ``Static``, or those under ``nnx.``, subscripted or not,
    as flax resolves them; one that is no expression is a ``SyntaxError``, as in flax."""
    expression = compile(annotation, "<annotation>", "eval", ast.PyCF_ONLY_AST).body
    if isinstance(expression, ast.Subscript):
        expression = expression.value
    return _MARKER_NAMES.get(ast.unparse(expression))


def warn_deprecated_annotations(cls: type) -> None:
    """``nnx.Data[...]`` / ``nnx.Static[...]`` annotations are deprecated for ``nnx.data()`` / ``nnx.static()``."""
    for annotation in inspect.get_annotations(cls).values():
        status = annotation_status(annotation)
        if status is not None:
            name = "Data" if status else "Static"
            warnings.warn(
                f"'{name}' is deprecated, please replace:\n\n  some_field: nnx.{name}[SomeType]\n\n"
                f"with:\n\n  some_field: SomeType = nnx.{name.lower()}()\n\n",
                DeprecationWarning,
                stacklevel=2,
            )


def field_status(cls: type, name: str, value: tp.Any) -> bool | None:
    """Whether a class attribute that is a dataclass field made by :func:`data` / :func:`static`
    (or with a bool ``static`` metadata entry) marks data (True) or static (False); None
    for any other attribute. A ``static`` entry that is no bool is a ValueError."""
    if not isinstance(value, dataclasses.Field):
        return None
    if _STATUS_KEY in value.metadata:
        return bool(value.metadata[_STATUS_KEY])
    if "static" not in value.metadata:
        return None
    if not isinstance(value.metadata["static"], bool):
        raise ValueError(
            f"Invalid 'static' metadata for attribute '{cls.__name__}.{name}': expected bool, got "
            f"{type(value.metadata['static']).__name__}."
        )
    return not value.metadata["static"]
