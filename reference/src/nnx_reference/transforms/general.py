"""Control flow and tracing utilities: ``cond``, ``switch``, ``eval_shape``, ``checkify``, ``make_jaxpr``."""

from __future__ import annotations

import functools
import typing as tp

import jax
from jax.experimental import checkify as checkify_lib

from .._sharding import on_mesh
from ..graphlib import iter_graph, set_graph_updates
from ..variablelib import Variable
from . import _checks as checks
from . import _lift as lift
from . import _refs as refs
from . import _traced as traced
from . import _trees as trees
from ._statics import insert_statics, remove_statics

__all__ = ["checkify", "cond", "eval_shape", "make_jaxpr", "switch"]


def _lift_call(
    name: str,
    args: tp.Any,
    graph: bool | None,
    graph_updates: bool | None,
    roots: checks.Roots = checks.CALL_ROOTS,
    tree_input_paths: bool = False,
) -> lift.Lifted:
    mode = trees.resolve_mode(graph, graph_updates)
    return lift.lift(name, args, None, mode, coalesce=True, roots=roots, tree_input_paths=tree_input_paths)


def _pure(name: str, lifted: lift.Lifted, fun: tp.Callable) -> tp.Callable:
    """``fun(*args, **kwargs)`` as a function of the pure inputs, returning the pure result."""
    static = lifted.static

    def build(call: tp.Callable) -> tp.Callable:
        def pure_fn(pure: tp.Any) -> tp.Any:
            entered = lift.enter(static, pure)
            args, kwargs = entered.args
            return lift.exit(name, static, entered, call(*args, **kwargs))

        return trees.reported_as(fun, pure_fn)

    return traced.pure_function(fun, (name, static), build)


def cond(
    pred: tp.Any,
    true_fun: tp.Callable[..., tp.Any],
    false_fun: tp.Callable[..., tp.Any],
    *operands: tp.Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.lax.cond``: operands may contain graph nodes; updates propagate."""
    lifted = _lift_call("cond", (operands, {}), graph, graph_updates, (".operands", ".kwargs"))
    branches = [_pure("cond", lifted, f) for f in (true_fun, false_fun)]
    return lift.apply(lifted, jax.lax.cond(pred, *branches, lifted.pure))


def switch(
    index: tp.Any,
    branches: tp.Sequence[tp.Callable[..., tp.Any]],
    *operands: tp.Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """Lifted ``jax.lax.switch``: operands may contain graph nodes; updates propagate."""
    lifted = _lift_call("switch", (operands, {}), graph, graph_updates, (".operands", ".kwargs"))
    pure_branches = [_pure("switch", lifted, b) for b in branches]
    return lift.apply(lifted, jax.lax.switch(index, pure_branches, lifted.pure))


def eval_shape(
    f: tp.Callable[..., tp.Any],
    *args: tp.Any,
    graph: bool | None = None,
    graph_updates: bool | None = None,
    **kwargs: tp.Any,
) -> tp.Any:
    """Lifted ``jax.eval_shape``: the output with ``ShapeDtypeStruct`` values; inputs untouched.
    With graph updates, the output's Variables carry the sharding of their mesh (see
    :func:`_sharding.on_mesh`)."""
    trees.reject_bound_method("eval_shape", f)
    updates = trees.resolve_mode(graph, graph_updates).graph_updates
    if not updates:
        checks.check_no_sharing("eval_shape", (args, kwargs))
    # flax's eval_shape names input Variables by key path even in graph mode
    lifted = _lift_call("eval_shape", (args, kwargs), graph, graph_updates, tree_input_paths=True)
    pure_fn = _pure("eval_shape", lifted, f)

    @functools.wraps(f)  # jax's errors name ``f``
    def traced_fn(pure: tp.Any) -> tp.Any:
        # With graph updates a Ref made inside comes out as its value's shape; without, jax
        # rejects it as it does any Ref a traced function returns.
        result = pure_fn(pure)
        if not (lifted.static.graph and lift.holds_objects(result.out_tree)):
            result = result._replace(in_part=[])  # nothing is written back, and no output object needs them
        return refs.read_refs(result) if updates else result

    result = jax.eval_shape(traced_fn, lifted.pure)
    out = lift.apply(lifted, result, write=False)
    if updates:
        for _, node in iter_graph(out, graph=True):
            if isinstance(node, Variable) and isinstance(node.get_raw_value(), jax.ShapeDtypeStruct):
                node.set_raw_value(on_mesh(node.get_raw_value(), node.get_metadata()))
    return out


def checkify(
    f: tp.Callable[..., tp.Any],
    errors: frozenset = checkify_lib.user_checks,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Callable[..., tuple[tp.Any, tp.Any]]:
    """Lifted ``jax.experimental.checkify.checkify``: returns ``(error, output)``."""
    trees.reject_bound_method("checkify", f)
    graph, graph_updates = trees.resolve_mode(graph, graph_updates)  # fixed when made, as flax's

    @functools.wraps(f)
    def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tuple[tp.Any, tp.Any]:
        lifted = _lift_call("checkify", (args, kwargs), graph, graph_updates)
        error, result = checkify_lib.checkify(_pure("checkify", lifted, f), errors)(lifted.pure)
        return error, lift.apply(lifted, result)

    return wrapper


class MakeJaxprOptions(tp.TypedDict, total=False):
    """The keyword arguments of :func:`make_jaxpr`."""

    graph: bool | None
    graph_updates: bool | None
    static_argnums: int | tp.Sequence[int]


@tp.overload
def make_jaxpr(f: trees.Fn, /, **options: tp.Unpack[MakeJaxprOptions]) -> trees.Fn: ...
@tp.overload
def make_jaxpr(**options: tp.Unpack[MakeJaxprOptions]) -> tp.Callable[[trees.Fn], trees.Fn]: ...
def make_jaxpr(
    f: tp.Callable[..., tp.Any] | trees.Missing = trees.MISSING,
    *,
    graph: bool | None = None,
    graph_updates: bool | None = None,
    static_argnums: int | tp.Sequence[int] = (),
) -> trees.Fn | tp.Callable[[trees.Fn], trees.Fn]:
    """Lifted ``jax.make_jaxpr``: the jaxpr of ``f`` over the arguments' pure state, whose
    outputs are what ``f`` returns; it takes no graph updates."""
    if isinstance(f, trees.Missing):  # the options are checked once the function comes
        return functools.partial(make_jaxpr, graph=graph, graph_updates=graph_updates, static_argnums=static_argnums)
    if graph_updates if graph_updates is not None else set_graph_updates.current_value():
        raise ValueError("nnx.make_jaxpr does not support graph_updates=True.")
    trees.reject_bound_method("make_jaxpr", f)
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    fun = f

    @functools.wraps(fun)
    def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        dynamic, _, statics = remove_statics(args, {}, nums, ())

        def call(*dyn: tp.Any, **kw: tp.Any) -> tp.Any:
            full, _ = insert_statics(dyn, {}, statics)
            return fun(*full, **kw)

        checks.check_no_sharing("make_jaxpr", (dynamic, kwargs))
        lifted = _lift_call("make_jaxpr", (dynamic, kwargs), graph, False, tree_input_paths=True)  # as eval_shape
        pure_fn = _pure("make_jaxpr", lifted, call)
        return jax.make_jaxpr(lambda pure: pure_fn(pure).out_tree)(lifted.pure)

    return wrapper
