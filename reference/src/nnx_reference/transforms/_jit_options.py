"""The options of ``jit``, defined once: :class:`JitOptions`, and :func:`taking_jit_options`,
which gives ``jit`` and ``jit_partial`` flax's signatures (the options as keywords) from it."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing as tp

R = tp.TypeVar("R")


@dataclasses.dataclass(frozen=True, kw_only=True)
class JitOptions:
    """The keyword arguments of ``jit`` (and ``jit_partial``), in flax's order, with flax's defaults."""

    in_shardings: tp.Any = None
    out_shardings: tp.Any = None
    static_argnums: int | tp.Sequence[int] | None = None
    static_argnames: str | tp.Iterable[str] | None = None
    donate_argnums: int | tp.Sequence[int] | None = None
    donate_argnames: str | tp.Iterable[str] | None = None
    keep_unused: bool = False
    device: tp.Any = None
    backend: str | None = None
    inline: bool = False
    graph: bool | None = None
    graph_updates: bool | None = None


_KEYWORDS = [
    inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=field.default, annotation=field.type)
    for field in dataclasses.fields(JitOptions)
]


def taking_jit_options(function: tp.Callable[..., R]) -> tp.Callable[..., R]:
    """``function(*leading, options)`` as a function of its leading parameters followed by
    the fields of :class:`JitOptions` as keyword-only parameters; its signature says so
    (the one flax's function has), and a wrong argument raises the TypeError a Python
    function of that signature raises."""
    leading = [p for name, p in inspect.signature(function).parameters.items() if name != "options"]
    signature = inspect.Signature([*leading, *_KEYWORDS])

    @functools.wraps(function)
    def wrapper(*args: tp.Any, **kwargs: tp.Any) -> R:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{function.__name__}() {error}") from None
        return function(*bound.args, options=JitOptions(**bound.kwargs))

    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    return wrapper
