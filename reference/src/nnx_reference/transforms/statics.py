"""Static arguments (``static_argnums`` / ``static_argnames``): taken out of a call, put back inside."""

from __future__ import annotations


def remove_statics(
    args: tuple, kwargs: dict, argnums: tuple[int, ...], argnames: tuple[str, ...]
) -> tuple[tuple, dict, tuple]:
    """Take static arguments out (negative argnums count from the end); they travel
    hashed in the static part that :func:`insert_statics` puts back."""
    n = len(args)
    nums = tuple(sorted({i % n for i in argnums if -n <= i < n}))
    static_args = tuple((i, args[i]) for i in nums)
    static_kwargs = tuple((k, kwargs[k]) for k in sorted(kwargs) if k in argnames)
    dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in argnames}
    # compared and hashed by value, as jax.jit compares static arguments
    return dyn_args, dyn_kwargs, (nums, static_args, static_kwargs)


def insert_statics(args: tuple, kwargs: dict, statics: tuple) -> tuple[tuple, dict]:
    _, static_args, static_kwargs = statics
    full = list(args)
    for i, value in static_args:
        full.insert(i, value)
    return tuple(full), {**kwargs, **dict(static_kwargs)}
