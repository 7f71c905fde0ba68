"""``jit_partial``: a jitted function with its first arguments bound once, whose Variables
are the only ones it takes (the runtime arguments hold none) and whose metadata it may
not change."""

from __future__ import annotations

import functools
import typing as tp

import jax

from . import _checks as checks
from . import _stages as stages
from . import _trees as trees
from ._jit_options import JitOptions, taking_jit_options
from .compilation import JitWrapped, StateSharding, checked_options

__all__ = ["jit_partial"]


@taking_jit_options
def jit_partial(fun: tp.Callable, *partial_args: tp.Any, options: JitOptions) -> PartialJit:
    """``jit`` of ``fun`` with ``partial_args`` bound as its first positional arguments.

    Updates to the Variables of the bound arguments are propagated after every call;
    graph updates are not supported (``graph=False`` or ``graph_updates=False``). Unlike
    :func:`jit`, it takes a Module's bound method, as flax's does.
    """
    mode = trees.resolve_mode(options.graph, options.graph_updates)
    if mode.graph_updates:
        raise ValueError("`graph_updates` not supported by `jit_partial`")
    checks.reject_variable_prefixes("jit_partial", "in_shardings", options.in_shardings)
    checks.reject_prefix_objects("jit_partial", options.in_shardings, StateSharding, mode, "in_shardings")
    leaves = jax.tree_util.tree_leaves(options.out_shardings, is_leaf=lambda x: isinstance(x, StateSharding))
    if any(isinstance(x, StateSharding) for x in leaves):
        raise ValueError("`out_shardings` cannot contain `StateSharding` objects in `jit_partial`")
    return PartialJit(JitWrapped(_keeping_metadata(fun, len(partial_args)), checked_options(options)), partial_args)


def _keeping_metadata(fun: tp.Callable, n_bound: int) -> tp.Callable:
    """``fun``, raising as flax's jit_partial does when it changes the metadata of a Variable
    of its first ``n_bound`` arguments."""

    @functools.wraps(fun)
    def guarded(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        leaves = jax.tree_util.tree_leaves(args[:n_bound], is_leaf=trees.is_variable)
        before = [(i, v, v.get_metadata()) for i, v in enumerate(leaves) if trees.is_variable(v)]
        out = fun(*args, **kwargs)
        for i, variable, metadata in before:
            if variable.get_metadata() != metadata:
                raise ValueError(
                    f"Variable metadata changed inside jit at path .args[0][{i}]. "
                    "Changing Variable metadata inside jit is not supported."
                )
        return out

    return guarded


class PartialJit:
    """What :func:`jit_partial` returns: the jitted function with ``partial_args`` bound as
    its first positional arguments, named after it, and its ``lower``, ``trace`` and
    ``eval_shape`` with them bound too, as flax's."""

    def __init__(self, jitted: JitWrapped, partial_args: tuple[tp.Any, ...]) -> None:
        self.jitted = jitted
        self.partial_args = partial_args
        functools.update_wrapper(self, jitted.fun)

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        _refuse_runtime_variables(args, kwargs)
        return self.jitted(*self.partial_args, *args, **kwargs)

    def __get__(self, obj: tp.Any, objtype: tp.Any = None) -> tp.Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def lower(self, *args: tp.Any, **kwargs: tp.Any) -> stages.Lowered:
        """See :meth:`JitWrapped.lower`; its compiled form takes the runtime arguments alone."""
        return self.trace(*args, **kwargs).lower()

    def trace(self, *args: tp.Any, **kwargs: tp.Any) -> stages.Traced:
        """See :meth:`JitWrapped.trace`."""
        _refuse_runtime_variables(args, kwargs)
        return self.jitted._staged((*self.partial_args, *args), kwargs, self._run_compiled)

    def _run_compiled(self, compiled: tp.Callable[..., tp.Any], args: tuple, kwargs: dict[str, tp.Any]) -> tp.Any:
        return self.jitted._run_compiled(compiled, (*self.partial_args, *args), kwargs)

    def eval_shape(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        """See :meth:`JitWrapped.eval_shape`."""
        _refuse_runtime_variables(args, kwargs)
        return self.jitted.eval_shape(*self.partial_args, *args, **kwargs)


def _refuse_runtime_variables(args: tuple, kwargs: dict[str, tp.Any]) -> None:
    """Variables (of Modules too) may only come through the bound arguments of :func:`jit_partial`."""
    if any(trees.is_variable(x) for x in jax.tree_util.tree_leaves((args, kwargs), is_leaf=trees.is_variable)):
        raise ValueError(
            "Found Variable in non-partial arguments. jit_partial only supports Variables in partial arguments."
        )
