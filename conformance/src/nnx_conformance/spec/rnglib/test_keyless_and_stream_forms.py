"""Parity with flax.nnx of what Rngs and RngStream offer beyond drawing a key: the keyless
``jax.random`` methods (``rngs.normal((2,))``), the keyless initializer methods
(``rngs.lecun_normal()(shape)``), and every form of ``split``, ``fork`` and ``broadcast``
(an int, a shape, None, a mapping of filters), on an Rngs and on one of its streams, with
``with_rngs`` as a function and as a decorator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = pytest.mark.kind("differential")

RANDOM_METHODS: dict[str, Callable[[Any], Any]] = {
    "bits": lambda r: r.bits((2,)),
    "uniform": lambda r: r.uniform((2,), minval=-1.0, maxval=2.0),
    "randint": lambda r: r.randint((3,), 0, 5),
    "permutation": lambda r: r.permutation(5),
    "choice": lambda r: r.choice(jnp.arange(5), (3,), replace=False),
    "normal": lambda r: r.normal((2, 2)),
    "multivariate_normal": lambda r: r.multivariate_normal(jnp.zeros(2), jnp.eye(2)),
    "truncated_normal": lambda r: r.truncated_normal(-1.0, 1.0, (2,)),
    "bernoulli": lambda r: r.bernoulli(0.3, (4,)),
    "beta": lambda r: r.beta(2.0, 3.0, (2,)),
    "cauchy": lambda r: r.cauchy((2,)),
    "dirichlet": lambda r: r.dirichlet(jnp.ones(3)),
    "exponential": lambda r: r.exponential((2,)),
    "gamma": lambda r: r.gamma(2.0, (2,)),
    "loggamma": lambda r: r.loggamma(2.0, (2,)),
    "poisson": lambda r: r.poisson(3.0, (2,)),
    "gumbel": lambda r: r.gumbel((2,)),
    "categorical": lambda r: r.categorical(jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(4,)),
    "laplace": lambda r: r.laplace((2,)),
    "logistic": lambda r: r.logistic((2,)),
    "pareto": lambda r: r.pareto(2.0, (2,)),
    "t": lambda r: r.t(3.0, (2,)),
    "chisquare": lambda r: r.chisquare(3.0, (2,)),
    "f": lambda r: r.f(3.0, 4.0, (2,)),
    "rademacher": lambda r: r.rademacher((4,)),
    "maxwell": lambda r: r.maxwell((2,)),
    "double_sided_maxwell": lambda r: r.double_sided_maxwell(0.0, 1.0, (2,)),
    "weibull_min": lambda r: r.weibull_min(1.0, 2.0, (2,)),
    "orthogonal": lambda r: r.orthogonal(3),
    "generalized_normal": lambda r: r.generalized_normal(2.0, (2,)),
    "ball": lambda r: r.ball(2, 2),
    "rayleigh": lambda r: r.rayleigh(1.0, (2,)),
    "wald": lambda r: r.wald(1.0, (2,)),
    "geometric": lambda r: r.geometric(0.5, (2,)),
    "triangular": lambda r: r.triangular(0.0, 0.5, 1.0, (2,)),
    "lognormal": lambda r: r.lognormal(shape=(2,)),
    "binomial": lambda r: r.binomial(5.0, 0.5, (2,)),
    "multinomial": lambda r: r.multinomial(5.0, jnp.array([0.2, 0.8]), shape=(2,)),
}
"""Each keyless random method of Rngs and RngStream, called with arguments of ``jax.random``'s function."""

INITIALIZER_METHODS: dict[str, tuple[tuple[Any, ...], tuple[int, ...]]] = {
    "delta_orthogonal": ((), (3, 3, 4)),
    "glorot_normal": ((), (3, 4)),
    "glorot_uniform": ((), (3, 4)),
    "he_normal": ((), (3, 4)),
    "he_uniform": ((), (3, 4)),
    "kaiming_normal": ((), (3, 4)),
    "kaiming_uniform": ((), (3, 4)),
    "lecun_normal": ((), (3, 4)),
    "lecun_uniform": ((), (3, 4)),
    "variance_scaling": ((2.0, "fan_out", "truncated_normal"), (3, 4)),
    "xavier_normal": ((), (3, 4)),
    "xavier_uniform": ((), (3, 4)),
}
"""Each keyless initializer method: the arguments of the initializer's constructor, and a shape to initialize."""

RECEIVERS = ("rngs", "stream")
"""Where a method is called: on an Rngs (its default stream) or on a named stream of it."""


def _receiver(nnx: Any, seed: int, where: str) -> tuple[Any, Any]:
    rngs = nnx.Rngs(seed, params=seed + 7)
    return rngs, (rngs if where == "rngs" else rngs.params)


@pytest.mark.apis("Rngs", "RngStream")
@pytest.mark.documented("guide:randomness (Rngs offers the jax.random functions without a key)")
@pytest.mark.parametrize("where", RECEIVERS)
@pytest.mark.parametrize("method", sorted(RANDOM_METHODS))
def test_a_keyless_random_method_draws_from_the_stream_what_flax_draws(
    nnx: Any, flax_nnx: Any, method: str, where: str
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs, receiver = _receiver(nnx, 3, where)
        first, second = RANDOM_METHODS[method](receiver), RANDOM_METHODS[method](receiver)
        return first, second, rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Rngs", "RngStream")
@pytest.mark.documented("guide:randomness (Rngs offers the jax.nn.initializers without a key)")
@pytest.mark.parametrize("where", RECEIVERS)
@pytest.mark.parametrize("method", sorted(INITIALIZER_METHODS))
def test_a_keyless_initializer_method_initializes_what_flax_initializes(
    nnx: Any, flax_nnx: Any, method: str, where: str
) -> None:
    arguments, shape = INITIALIZER_METHODS[method]

    def scenario(nnx: Any) -> Any:
        rngs, receiver = _receiver(nnx, 5, where)
        initializer = getattr(receiver, method)(*arguments)
        return initializer(shape), initializer(shape, jnp.float16), rngs

    assert_same(flax_nnx, nnx, scenario)


shapes_or_ints = st.one_of(st.integers(1, 3), st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple))
"""A split or broadcast size: an int or a shape."""

stream_forms = st.one_of(
    shapes_or_ints,
    st.none(),
    st.dictionaries(
        st.sampled_from(["params", "dropout", "noise", ...]),
        st.one_of(st.none(), shapes_or_ints),
        min_size=1,
        max_size=3,
    ),
)
"""A split or broadcast of Rngs: an int, a shape, None, or a mapping of filters (names, ...) to those
(an empty mapping has a test of its own)."""


@pytest.mark.apis("Rngs")
@pytest.mark.documented(
    "Rngs.split and Rngs.broadcast docstrings (an int, a shape or a mapping of filters to those or None)"
)
@given(operation=st.sampled_from(["split", "broadcast", "fork"]), form=stream_forms, seed=st.integers(0, 9))
@example(operation="split", form=(2, 3), seed=0)
@example(operation="split", form={"params": None, "dropout": 2}, seed=0)
def test_rngs_split_broadcast_and_fork_take_every_form_as_flax_does(
    nnx: Any, flax_nnx: Any, operation: str, form: Any, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=seed, dropout=seed + 1, noise=seed + 2)
        made = rngs.fork(split=form) if operation == "fork" else getattr(rngs, operation)(form)
        return made, rngs, rngs.noise()  # a split or broadcast stream draws no single key

    assert_same(flax_nnx, nnx, scenario, deprecated=("split",) if operation == "fork" and form is not None else ())


@pytest.mark.apis("Rngs")
@pytest.mark.documented(None)
@pytest.mark.parametrize("operation", ["split", "broadcast", "fork"])
def test_an_empty_mapping_of_filters_is_taken_as_flax_takes_it(nnx: Any, flax_nnx: Any, operation: str) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=0, dropout=1)
        return (rngs.fork(split={}) if operation == "fork" else getattr(rngs, operation)({})), rngs

    assert_same(flax_nnx, nnx, scenario, deprecated=("split",) if operation == "fork" else ())


@pytest.mark.apis("RngStream")
@pytest.mark.documented("RngStream.broadcast docstring; Rngs streams (guide:randomness)")
@given(
    operation=st.sampled_from(["split", "broadcast", "fork", "fork_split"]), size=shapes_or_ints, seed=st.integers(0, 9)
)
def test_a_stream_splits_broadcasts_and_forks_as_flax_s(
    nnx: Any, flax_nnx: Any, operation: str, size: Any, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        stream = nnx.Rngs(seed).default
        if operation == "fork":
            made = stream.fork()
        elif operation == "fork_split":
            made = stream.fork(split=size)
        else:
            made = getattr(stream, operation)(size)
        return made, stream, stream()  # a split or broadcast stream draws no single key

    assert_same(flax_nnx, nnx, scenario, deprecated=("split",) if operation == "fork_split" else ())


@pytest.mark.apis("RngStream", "Rngs")
@pytest.mark.documented("Rngs docstring (a seed is an int or a key; a key is made from raw key data)")
@pytest.mark.parametrize("key", ["int", "typed key", "raw key data", "float array", "string"])
def test_a_stream_is_made_from_an_int_a_key_or_raw_key_data_and_refuses_anything_else(
    nnx: Any, flax_nnx: Any, key: str
) -> None:
    seeds = {
        "int": lambda: 4,
        "typed key": lambda: jax.random.key(4),
        "raw key data": lambda: jax.random.key_data(jax.random.key(4)),
        "float array": lambda: jnp.ones(2),
        "string": lambda: "four",
    }

    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(seeds[key]())
        return rngs, rngs()

    assert_same(flax_nnx, nnx, scenario)


with_rngs_forms = st.fixed_dictionaries(
    {},
    optional={
        "split": st.one_of(
            shapes_or_ints, st.dictionaries(st.sampled_from(["params", ...]), shapes_or_ints, max_size=1)
        ),
        "broadcast": st.one_of(
            shapes_or_ints, st.dictionaries(st.sampled_from(["dropout", ...]), shapes_or_ints, max_size=1)
        ),
        "fork": st.sampled_from(["noise", ("noise", "dropout")]),
        "only": st.sampled_from(["params", "dropout", True]),
    },
)
"""Keyword arguments of ``with_rngs``: split, broadcast and fork forms and an ``only`` filter."""


@pytest.mark.apis("with_rngs")
@pytest.mark.documented("with_rngs docstring (split, fork, broadcast and only; used as a decorator without a tree)")
@given(kwargs=with_rngs_forms, decorator=st.booleans(), seed=st.integers(0, 9))
def test_with_rngs_as_a_function_or_a_decorator_treats_each_stream_as_flax_does(
    nnx: Any, flax_nnx: Any, kwargs: dict[str, Any], decorator: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=seed, dropout=seed + 1, noise=seed + 2)
        if decorator:
            made = nnx.with_rngs(**kwargs, graph=False)(lambda rngs, tag: (rngs, tag))(rngs, tag="kept")
        else:
            made = nnx.with_rngs(rngs, **kwargs, graph=False)
        return made, rngs

    assert_same(flax_nnx, nnx, scenario)


POLICIES: dict[str, Any] = {
    "scalars_only": "scalars_only",
    "match_shape": "match_shape",
    "a callable": lambda path, key, shape: jnp.broadcast_to(key, shape),
    "an unknown name": "split_everything",
}
"""reseed's policies: the two named ones, a callable (path, scalar_key, target_shape) -> key, and a wrong name."""


@pytest.mark.apis("reseed", "split_rngs")
@pytest.mark.documented("reseed docstring (policy: 'scalars_only', 'match_shape' or a callable)")
@given(
    policy=st.sampled_from(sorted(POLICIES)),
    splits=st.sampled_from([None, 2, (2, 3)]),
    graph=st.booleans(),
    seed=st.integers(0, 9),
)
def test_reseed_applies_its_policy_to_scalar_and_split_keys_as_flax_does(
    nnx: Any, flax_nnx: Any, policy: str, splits: Any, graph: bool, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=seed, dropout=seed + 1)
        if splits is not None:
            nnx.split_rngs(rngs, splits=splits, only="dropout", graph=graph, graph_updates=graph)
        nnx.reseed(rngs, dropout=seed + 5, params=seed + 6, policy=POLICIES[policy], graph=graph)
        return rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("split_rngs", "restore_rngs")
@pytest.mark.documented("split_rngs docstring (splits an int or a shape; squeeze drops the split axis)")
@given(
    splits=st.sampled_from([1, 2, (2, 3)]),
    squeeze=st.booleans(),
    graph=st.booleans(),
    updates=st.booleans(),
    only=st.sampled_from([..., "params", "dropout"]),
)
def test_split_rngs_splits_squeezes_and_restores_as_flax_does(
    nnx: Any, flax_nnx: Any, splits: Any, squeeze: bool, graph: bool, updates: bool, only: Any
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=0, dropout=1)
        made = nnx.split_rngs(rngs, splits=splits, squeeze=squeeze, only=only, graph=graph, graph_updates=updates)
        snapshot = nnx.state(rngs)
        if graph and updates:
            nnx.restore_rngs(made)
            return snapshot, rngs
        return snapshot, made, rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("with_rngs")
@pytest.mark.documented(
    "with_rngs docstring (a stream takes the first rule that matches it; two specific rules conflict)"
)
@pytest.mark.parametrize(
    "rules",
    [
        {"split": {"params": 2}, "fork": "params"},
        {"split": {"params": 2}, "broadcast": {"params": 3}},
        {"split": {...: 2}, "fork": "params"},
        {"broadcast": {"dropout": 2}, "fork": ("params", "dropout")},
    ],
    ids=["split-and-fork", "split-and-broadcast", "catch-all-split-and-fork", "broadcast-and-fork"],
)
def test_with_rngs_refuses_a_stream_two_specific_rules_match_naming_its_path(
    nnx: Any, flax_nnx: Any, rules: dict[str, Any]
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=0, dropout=1)
        return nnx.with_rngs({"inner": rngs}, **rules, graph=False), rngs

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("Rngs")
@pytest.mark.documented("Rngs docstring (a stream is an attribute; a missing one is an AttributeError)")
@pytest.mark.parametrize("name", ["__array__", "__missing_dunder__", "missing_stream"])
def test_an_rngs_without_a_stream_of_that_name_raises_attribute_error_as_flax_does(
    nnx: Any, flax_nnx: Any, name: str
) -> None:
    assert_same(flax_nnx, nnx, lambda nnx: getattr(nnx.Rngs(params=0), name))


@pytest.mark.apis("restore_rngs")
@pytest.mark.documented("nnx.compat (the graph-mode defaults of rnglib's functions); restore_rngs docstring")
@given(draws=st.integers(0, 2), seed=st.integers(0, 9))
def test_compat_backup_keys_keeps_each_stream_s_key_for_restore_rngs_as_flax_does(
    nnx: Any, flax_nnx: Any, draws: int, seed: int
) -> None:
    def scenario(nnx: Any) -> Any:
        rngs = nnx.Rngs(params=seed, dropout=seed + 1)
        backups = nnx.compat.backup_keys({"rngs": rngs, "again": rngs})
        nnx.split_rngs(rngs, splits=2, graph=False, graph_updates=False)
        drawn = [rngs.params() for _ in range(draws)]
        nnx.restore_rngs(backups)
        return backups, drawn, rngs

    assert_same(flax_nnx, nnx, scenario)
