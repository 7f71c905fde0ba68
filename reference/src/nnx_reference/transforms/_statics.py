"""Static arguments (``static_argnums`` / ``static_argnames``): taken out of a call, put back inside."""

from __future__ import annotations

import typing as tp


class Statics(tp.NamedTuple):
    """A call's static arguments, compared and hashed by value (as jax.jit compares them)."""

    positions: tuple[int, ...]  # of the static positional arguments, counted from 0
    args: tuple[tuple[int, tp.Any], ...]  # (position, value)
    kwargs: tuple[tuple[str, tp.Any], ...]  # (name, value), sorted by name


class Dynamic(tp.NamedTuple):
    """A call split by :func:`remove_statics`: the dynamic arguments and the static ones."""

    args: tuple[tp.Any, ...]
    kwargs: dict[str, tp.Any]
    statics: Statics


def remove_statics(
    args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], argnums: tuple[int, ...], argnames: tuple[str, ...]
) -> Dynamic:
    """Take static arguments out (negative argnums count from the end); they travel
    hashed in the static part that :func:`insert_statics` puts back."""
    n = len(args)
    nums = tuple(sorted({i % n for i in argnums if -n <= i < n}))
    static_args = tuple((i, args[i]) for i in nums)
    static_kwargs = tuple((k, kwargs[k]) for k in sorted(kwargs) if k in argnames)
    for _, value in (*static_args, *static_kwargs):
        _check_hashable(value)
    if any(i < -n for i in argnums):  # jax.jit's assertion (a signature with *args gets this far)
        raise AssertionError(f"static_argnums={argnums} counts back past the {n} positional arguments passed")
    dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in argnames}
    return Dynamic(dyn_args, dyn_kwargs, Statics(nums, static_args, static_kwargs))


def _check_hashable(value: tp.Any) -> None:
    """Raises jax.jit's ValueError for a static argument that cannot be hashed."""
    try:
        hash(value)
    except TypeError as error:
        raise ValueError(
            "Non-hashable static arguments are not supported. An error occurred while trying to hash an "
            f"object of type {type(value)}, {value}. The error was:\n{type(error).__name__}: {error}\n"
        ) from error


def insert_statics(
    args: tuple[tp.Any, ...], kwargs: dict[str, tp.Any], statics: Statics
) -> tuple[tuple[tp.Any, ...], dict[str, tp.Any]]:
    """The full call again: the dynamic arguments with the static ones put back in place."""
    full = list(args)
    for i, value in statics.args:
        full.insert(i, value)
    return tuple(full), {**kwargs, **dict(statics.kwargs)}
