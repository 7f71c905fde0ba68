"""What ``lower`` and ``trace`` of a jitted function return: JAX's stages of the pure
function, whose compiled form is called with the user's arguments (their Variables
updated after the call), as flax's ``Traced``, ``Lowered`` and ``Compiled``."""

from __future__ import annotations

import typing as tp

import jax

Run = tp.Callable[[tp.Callable[..., tp.Any], tuple[tp.Any, ...], dict[str, tp.Any]], tp.Any]
"""Calls a compiled pure function on the user's arguments and applies its updates."""


class _Stage:
    """What every stage tells of the pure function's inputs."""

    def __init__(self, inner: tp.Any, run: Run) -> None:
        self._inner = inner
        self._run = run

    @property
    def in_tree(self) -> jax.tree_util.PyTreeDef:
        return self._inner.in_tree

    @property
    def in_avals(self) -> tp.Any:
        return self._inner.in_avals

    @property
    def donate_argnums(self) -> tp.Any:
        return self._inner.donate_argnums


class Compiled(_Stage):
    """A compiled jitted function: call it with the arguments it was lowered for."""

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        return self._run(self._inner, args, kwargs)

    @property
    def out_tree(self) -> jax.tree_util.PyTreeDef:
        return self._inner.out_tree

    def as_text(self) -> str | None:
        return self._inner.as_text()

    def cost_analysis(self) -> tp.Any | None:
        return self._inner.cost_analysis()

    def memory_analysis(self) -> tp.Any | None:
        return self._inner.memory_analysis()

    def runtime_executable(self) -> tp.Any | None:
        return self._inner.runtime_executable()

    @property
    def input_shardings(self) -> tp.Any:
        return self._inner.input_shardings

    @property
    def output_shardings(self) -> tp.Any:
        return self._inner.output_shardings

    @property
    def input_layouts(self) -> tp.Any:
        return self._inner.input_formats


class Lowered(_Stage):
    """A lowered jitted function, ready for :meth:`compile`."""

    @property
    def args_info(self) -> tp.Any:
        return self._inner.args_info

    @property
    def out_tree(self) -> jax.tree_util.PyTreeDef:
        return self._inner.out_tree

    def compile(self, compiler_options: tp.Any = None) -> Compiled:
        return Compiled(self._inner.compile(compiler_options), self._run)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        return self._inner.as_text(dialect=dialect, debug_info=debug_info)

    def compiler_ir(self, dialect: str | None = None) -> tp.Any | None:
        return self._inner.compiler_ir(dialect=dialect)

    def cost_analysis(self) -> tp.Any | None:
        return self._inner.cost_analysis()


class Traced(_Stage):
    """A traced jitted function, ready for :meth:`lower`."""

    @property
    def out_info(self) -> tp.Any:
        return self._inner.out_info

    def lower(self, *, lowering_platforms: tuple[str, ...] | None = None) -> Lowered:
        return Lowered(self._inner.lower(lowering_platforms=lowering_platforms), self._run)
