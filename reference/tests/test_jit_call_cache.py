"""The cached structure of plain ``nnx.jit`` calls (``transforms/_call_cache.py``).

A call on the same objects as one of the last few calls, in either mode, reads the
leaves straight from the Variables found then. Each test changes the structure between two calls
in one of the ways a model can change, and checks that the second call sees it, as a
call on a fresh copy of the model does.
"""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nnx_reference as nnx
from nnx_reference import _structure
from nnx_reference.transforms import _call_cache

MODES = {"graph mode": dict(graph=True, graph_updates=True), "tree mode": dict(graph=False)}


Jit = tp.Callable[[tp.Callable[..., tp.Any]], tp.Any]


@pytest.fixture(params=MODES.values(), ids=MODES.keys())
def jit(request: pytest.FixtureRequest) -> Jit:
    """``nnx.jit`` in one mode (every test runs in each)."""
    return lambda function: nnx.jit(function, **request.param)


def _model() -> nnx.Linear:
    return nnx.Linear(2, 2, rngs=nnx.Rngs(0))


def _scaled(model: nnx.Linear) -> jnp.ndarray:
    return model.kernel[...] * model.kernel.get_metadata("scale", 1.0)


def _cached(jitted: tp.Any, *args: tp.Any) -> None:
    """Calls twice: the second call, on an unchanged structure, keeps it for the next."""
    jitted(*args)
    jitted(*args)
    assert jitted._tree_jit.cached, "two calls on an unchanged structure kept nothing for the next"


def _check(jitted: tp.Any, model: tp.Any, expected: tp.Any, change: str) -> None:
    np.testing.assert_allclose(
        np.asarray(jitted(model)), np.asarray(expected), err_msg=f"a call after {change} did not see it"
    )


def test_a_second_call_on_the_same_model_takes_the_cached_structure(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    cached = dict(jitted._tree_jit.cached)
    model.kernel[...] = jnp.ones((2, 2))
    _check(jitted, model, jnp.ones((2, 2)), "a new value of a Variable")
    assert jitted._tree_jit.cached == cached, "a change of value alone made the cached structure stale"


def test_a_structure_changed_before_every_call_is_not_cached_in_vain(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    for step in range(3):
        model.step = step
        _check(jitted, model, model.kernel[...], "a static attribute changed")
    assert not jitted._tree_jit.cached, "a structure that changes before every call was cached anyway"


def test_a_first_call_on_a_model_keeps_nothing_and_the_second_keeps_its_structure(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    jitted(model)
    assert not jitted._tree_jit.cached, "a model called once was cached (most are never called again)"
    jitted(model)
    assert jitted._tree_jit.cached, "a model called twice on one structure was not cached"


def test_two_stale_calls_stop_the_caching_of_a_structure_that_keeps_changing(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    model.step = 0
    _check(jitted, model, model.kernel[...], "a static attribute changed")
    assert jitted._tree_jit.cached, "after one stale call the new structure is cached again"
    model.step = 1
    _check(jitted, model, model.kernel[...], "a static attribute changed")
    assert not jitted._tree_jit.cached, "after two stale calls in a row the structure was cached again"


def test_models_called_in_turn_are_each_cached(jit: Jit) -> None:
    jitted = jit(_scaled)
    first, second = _model(), nnx.Linear(2, 2, rngs=nnx.Rngs(1))
    for _ in range(3):
        _check(jitted, first, first.kernel[...], "a call on another model")
        _check(jitted, second, second.kernel[...], "a call on another model")
    assert len(jitted._tree_jit.cached) == 2, "two models called in turn were not both cached"
    first.kernel = nnx.Param(jnp.full((2, 2), 3.0))
    _check(jitted, first, jnp.full((2, 2), 3.0), "a Variable of one of two cached models was replaced")
    _check(jitted, second, second.kernel[...], "the other cached model's Variable was replaced")


def test_the_last_eight_models_called_are_kept_and_the_oldest_dropped(jit: Jit) -> None:
    jitted = jit(_scaled)
    models = [nnx.Linear(2, 2, rngs=nnx.Rngs(seed)) for seed in range(9)]
    for model in models:
        _cached(jitted, model)
    kept = len(jitted._tree_jit.cached)
    assert kept == 8, f"{kept} models' structures kept, not the last eight"
    _check(jitted, models[0], models[0].kernel[...], "its structure was dropped")


def test_a_change_made_without_setattr_is_seen(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    vars(model)["kernel"] = nnx.Param(jnp.full((2, 2), 4.0))
    _check(jitted, model, jnp.full((2, 2), 4.0), "a Variable was replaced through vars()")


class _Doubled(nnx.Linear):
    """A Linear whose ``_scaled`` doubles (the function reads a class attribute)."""

    factor = 2.0


def test_a_class_rebound_without_setattr_is_seen(jit: Jit) -> None:
    jitted = jit(lambda m: _scaled(m) * getattr(m, "factor", 1.0))
    model = _model()
    _cached(jitted, model)
    object.__setattr__(model, "__class__", _Doubled)
    _check(jitted, model, model.kernel[...] * 2.0, "the model's class was rebound with object.__setattr__")


def test_an_attribute_dict_rebound_without_setattr_is_seen_and_so_are_its_changes(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    object.__setattr__(model, "__dict__", dict(vars(model)))  # equal to the old one, not it
    _check(jitted, model, model.kernel[...], "the model's attribute dict was rebound")
    vars(model)["kernel"] = nnx.Param(jnp.full((2, 2), 4.0))
    _check(jitted, model, jnp.full((2, 2), 4.0), "a Variable was replaced in the new attribute dict")


@pytest.mark.skipif(not _structure.every_change_counted, reason="this interpreter does not report every dict change")
def test_a_call_after_no_change_compares_no_attributes(jit: Jit, monkeypatch: pytest.MonkeyPatch) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    jitted(model)  # the first call that takes the cached structure: nothing counted since it was cached

    def compared(*_: tp.Any) -> tp.NoReturn:
        raise AssertionError("a call after no change compared the model's attributes")

    monkeypatch.setattr(_call_cache.Contents, "unchanged", compared)
    model.kernel[...] = jnp.ones((2, 2))  # a new value is no structural change
    _check(jitted, model, jnp.ones((2, 2)), "a new value of a Variable")


def _counter() -> nnx.Module:
    """A Module with a 0-d Param ``count`` and a static ``step``."""
    model = nnx.Module()
    model.count = nnx.Param(jnp.array(1.0))
    model.step = 2.0
    return model


def _count_up(model: nnx.Module) -> jnp.ndarray:
    model.count[...] += model.step
    return model.count[...]


def test_a_variable_replaced_without_setattr_by_an_equal_one_is_the_one_written(jit: Jit) -> None:
    jitted = jit(_count_up)
    model = _counter()
    _cached(jitted, model)
    jitted(model)  # a call that takes the cached structure and writes through it
    old = model.count
    object.__setattr__(model, "count", nnx.Param(jnp.array(old[...])))  # equal to the old one, not it
    jitted(model)
    assert model.count is not old, "the replacement was undone"
    assert float(model.count[...]) == float(old[...]) + 2.0, "the call did not write the Variable the model holds now"


def test_a_plain_array_replaced_without_setattr_by_an_equal_one_of_another_dtype_is_read(jit: Jit) -> None:
    jitted = jit(lambda m: m.count + 0)
    model = nnx.Module()
    model.count = nnx.data(jnp.array(1.0))
    _cached(jitted, model)
    vars(model)["count"] = jnp.array(1, jnp.int32)  # == the old array, another dtype
    assert jitted(model).dtype == jnp.int32, "a call after the array was replaced read the old array"


def test_a_static_attribute_replaced_without_setattr_is_seen(jit: Jit) -> None:
    jitted = jit(_count_up)
    model = _counter()
    _cached(jitted, model)
    object.__setattr__(model, "step", 5.0)
    before = float(model.count[...])
    jitted(model)
    assert float(model.count[...]) == before + 5.0, "a call after a static attribute changed used the old one"


def test_a_variable_replaced_by_assignment_is_read(jit: Jit) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    model.kernel = nnx.Param(jnp.full((2, 2), 3.0))
    _check(jitted, model, jnp.full((2, 2), 3.0), "a Variable was replaced")


def test_an_attribute_added_or_deleted_is_seen(jit: Jit) -> None:
    def total(model: nnx.Module) -> jnp.ndarray:
        return sum(jnp.sum(v[...]) for v in vars(model).values() if isinstance(v, nnx.Param))

    jitted = jit(total)
    model = nnx.Module()
    model.a = nnx.Param(jnp.ones(3))
    _cached(jitted, model)
    model.b = nnx.Param(jnp.ones(2))
    _check(jitted, model, 5.0, "an attribute was added")
    del model.a
    _check(jitted, model, 2.0, "an attribute was deleted")


def test_a_list_appended_to_is_seen(jit: Jit) -> None:
    jitted = jit(lambda layers: sum(jnp.sum(p[...]) for p in layers))
    layers = nnx.List([nnx.Param(jnp.ones(2))])
    _cached(jitted, layers)
    layers.append(nnx.Param(jnp.ones(3)))
    _check(jitted, layers, 5.0, "a List grew")
    layers[0] = nnx.Param(jnp.zeros(2))
    _check(jitted, layers, 3.0, "an item of a List was replaced")


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v.set_metadata("scale", 2.0),
        lambda v: v.set_metadata({"scale": 2.0}),
        lambda v: v.copy_from(nnx.Param(v.get_raw_value(), scale=2.0)),
        lambda v: dict.__setitem__(v._var_metadata, "scale", 2.0),
        lambda v: object.__setattr__(v, "_var_metadata", {**v.get_metadata(), "scale": 2.0}),
    ],
    ids=[
        "one entry set in place",
        "all metadata replaced",
        "taken from another Variable",
        "one entry set with dict's own method",
        "the mapping rebound with object.__setattr__",
    ],
)
def test_new_metadata_of_a_variable_is_seen(jit: Jit, change: tp.Callable[[nnx.Variable], None]) -> None:
    jitted = jit(_scaled)
    model = _model()
    _cached(jitted, model)
    change(model.kernel)
    _check(jitted, model, model.kernel[...] * 2.0, "the metadata of a Variable changed")


def test_a_variable_given_a_value_of_another_structure_is_read_whole(jit: Jit) -> None:
    jitted = jit(lambda v: jnp.sum(jnp.stack(jax.tree_util.tree_leaves(v.get_value()))))
    variable = nnx.Variable(jnp.ones(2))
    _cached(jitted, variable)
    variable.set_value((jnp.ones(2), jnp.full(2, 2.0)))
    _check(jitted, variable, 6.0, "a Variable was given a tuple")


def test_a_variable_given_a_ref_is_read_through_it(jit: Jit) -> None:
    jitted = jit(lambda v: jnp.sum(v[...]))
    variable = nnx.Variable(jnp.ones(2))
    _cached(jitted, variable)
    variable.set_raw_value(jax.new_ref(jnp.full(2, 2.0)))
    _check(jitted, variable, 4.0, "a Variable was given a Ref")


def test_a_data_list_changed_in_place_is_seen(jit: Jit) -> None:
    model = nnx.Module()
    model.items = nnx.data([nnx.Param(jnp.ones(2))])
    jitted = jit(lambda m: sum(jnp.sum(p[...]) for p in m.items))
    jitted(model)
    jitted(model)
    assert not jitted._tree_jit.cached, "a structure holding a plain list was cached"
    model.items.append(nnx.Param(jnp.ones(3)))
    _check(jitted, model, 5.0, "a plain list of the model grew in place")


def test_an_attribute_added_by_a_graph_mode_call_is_seen(jit: Jit) -> None:
    def grow(model: nnx.Linear) -> None:
        model.extra = nnx.Param(jnp.full((2, 2), 5.0))

    jitted = jit(lambda m: m.kernel[...] + getattr(m, "extra", nnx.Param(jnp.zeros((2, 2))))[...])
    model = _model()
    _cached(jitted, model)
    nnx.jit(grow)(model)
    _check(jitted, model, model.kernel[...] + 5.0, "a graph-mode call added an attribute")


def test_the_captures_removed_after_capture_are_not_read(jit: Jit) -> None:
    def variables(model: nnx.Linear) -> jnp.ndarray:
        return jnp.asarray(len(jax.tree_util.tree_leaves(model, is_leaf=lambda x: isinstance(x, nnx.Variable))))

    jitted = jit(variables)
    model = _model()
    _cached(jitted, model)
    inside, _ = nnx.capture(jitted, nnx.Intermediate)(model)
    assert int(inside) == 3, f"a call inside capture saw {int(inside)} Variables, expected kernel, bias and the capture"
    _check(jitted, model, 2, "capture removed its attribute")


def test_another_model_or_argument_is_flattened_anew(jit: Jit) -> None:
    jitted = jit(lambda m, x: m(x))
    first, second = _model(), nnx.Linear(2, 2, rngs=nnx.Rngs(1))
    x = jnp.ones((1, 2))
    _cached(jitted, first, x)
    _check(lambda m: jitted(m, x), second, second(x), "a call on another model")
    _check(lambda m: jitted(m, x=x), second, second(x), "a call with a keyword argument")
