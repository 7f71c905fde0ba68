"""Random number streams: ``Rngs``, ``RngStream`` and the functions that split, fork
and reseed the streams found inside a graph.

An ``RngStream`` holds a root key (``RngKey``) and a counter (``RngCount``). Calling
it returns ``jax.random.fold_in(key, count)`` and increments the counter, so the
same seed always yields the same sequence of keys. ``Rngs`` is a named collection
of streams with a ``default`` fallback.
"""

from __future__ import annotations

import dataclasses
import functools
import typing as tp
import warnings

import jax
import jax.numpy as jnp

from . import filterlib, graphlib
from .pytreelib import Pytree
from .variablelib import Variable

__all__ = [
    "RngCount",
    "RngKey",
    "RngState",
    "RngStream",
    "Rngs",
    "fork_rngs",
    "reseed",
    "restore_rngs",
    "split_rngs",
    "with_rngs",
]

F = tp.TypeVar("F", bound=tp.Callable[..., tp.Any])
RngValue = int | jax.Array
Shape = int | tuple[int, ...]
SplitPattern = tp.Mapping[filterlib.Filter, Shape | None] | Shape | None
StreamBackup = tuple["RngStream", jax.Array, jax.Array]
KeylessInitializer = tp.Callable[..., jax.Array]
ReseedPolicy = tp.Literal["scalars_only", "match_shape"] | tp.Callable[[tuple, jax.Array, tuple[int, ...]], jax.Array]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: tp.Any = _Missing()

# The jax.random samplers offered as methods: ``rngs.normal(shape)`` is
# ``jax.random.normal(rngs(), shape)``.
_DISTRIBUTIONS = (
    "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy",
    "chisquare", "choice", "dirichlet", "double_sided_maxwell", "exponential", "f",
    "gamma", "generalized_normal", "geometric", "gumbel", "laplace", "loggamma",
    "logistic", "lognormal", "maxwell", "multinomial", "multivariate_normal",
    "normal", "orthogonal", "pareto", "permutation", "poisson", "rademacher",
    "randint", "rayleigh", "t", "triangular", "truncated_normal", "uniform", "wald",
    "weibull_min",
)  # fmt: skip
# The jax.nn.initializers factories offered as methods: ``rngs.lecun_normal()``
# returns ``init`` without its key argument, drawing a key when it is called.
_INITIALIZERS = (
    "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
    "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform",
)  # fmt: skip


class RngState(Variable[jax.Array]):
    """Base type of the random state Variables; ``tag`` metadata names the stream."""

    __nnx_repr_group__ = "RngState"


class RngKey(RngState):
    """The root PRNG key of a stream."""


class RngCount(RngState):
    """The number of keys a stream has produced (uint32, shaped like its key)."""


def _as_key(value: tp.Any) -> jax.Array:
    """A typed PRNG key from an int seed, a typed key, or raw uint32 key data."""
    if isinstance(value, int):
        return jax.random.key(value)
    if isinstance(value, jax.Array) and value.dtype == jnp.uint32:
        return jax.random.wrap_key_data(value)
    if isinstance(value, jax.Array) and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
        return value
    raise ValueError(
        f"Invalid rng value: {value!r}; expected an int seed or a jax.Array with a "
        "jax.dtypes.prng_key dtype (e.g. from jax.random.key)"
    )


def _as_shape(k: Shape) -> tuple[int, ...]:
    return (k,) if isinstance(k, int) else tuple(k)


def _random_method(name: str) -> tp.Callable[..., jax.Array]:
    sampler = getattr(jax.random, name)

    @functools.wraps(sampler)
    def method(self: Rngs | RngStream, *args: tp.Any, **kwargs: tp.Any) -> jax.Array:
        return sampler(self(), *args, **kwargs)

    return method


def _initializer_method(name: str) -> tp.Callable[..., KeylessInitializer]:
    factory = getattr(jax.nn.initializers, name)

    def method(self: Rngs | RngStream, *args: tp.Any, **kwargs: tp.Any) -> KeylessInitializer:
        init = factory(*args, **kwargs)

        def keyless(*init_args: tp.Any, **init_kwargs: tp.Any) -> jax.Array:
            return init(self(), *init_args, **init_kwargs)

        return keyless

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``jax.nn.initializers.{name}(...)`` with keys drawn from this stream."
    return method


def _with_random_methods(cls: type[Pytree]) -> type[Pytree]:
    """Adds the jax.random samplers and the initializer factories as methods."""
    for name in _DISTRIBUTIONS:
        setattr(cls, name, _random_method(name))
    for name in _INITIALIZERS:
        setattr(cls, name, _initializer_method(name))
    return cls


@_with_random_methods
class RngStream(Pytree):
    """A stream of PRNG keys: a root ``key`` and a ``count`` of the keys drawn so far."""

    def __init__(self, key: jax.Array | int, *, tag: str):
        key = _as_key(key)
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        self.count = RngCount(jnp.zeros(key.shape, dtype=jnp.uint32), tag=tag)

    def __call__(self) -> jax.Array:
        """The next key: ``fold_in(key, count)``; then the count is incremented."""
        count = self.count.get_value()
        key = jax.random.fold_in(self.key.get_value(), count)
        self.count.set_value(count + 1)
        return key

    def split(self, k: Shape) -> RngStream:
        """A new stream whose keys are the next key split into shape ``k``."""
        return RngStream(jax.random.split(self(), k), tag=self.tag)

    def fork(self, *, split: Shape | None = None) -> RngStream:
        """A new stream rooted at the next key (split into ``split`` if given)."""
        key = self()
        if split is not None:
            _warn_fork_split()
            key = jax.random.split(key, split)
        return RngStream(key, tag=self.tag)

    def broadcast(self, k: Shape) -> RngStream:
        """A new stream whose key is the next key repeated into shape ``k + key.shape``."""
        key = self()
        return RngStream(jnp.broadcast_to(key, _as_shape(k) + key.shape), tag=self.tag)


def _warn_fork_split() -> None:
    warnings.warn(
        "The 'split' argument of 'fork' is deprecated; use the 'split' method instead.",
        DeprecationWarning,
        stacklevel=3,
    )


def _match(rules: list[tuple[filterlib.Predicate, tp.Any]], path: tuple, value: tp.Any) -> tp.Any:
    """The value of the first rule whose predicate matches, else MISSING."""
    for predicate, rule_value in rules:
        if predicate(path, value):
            return rule_value
    return MISSING


def _rules(pattern: SplitPattern) -> list[tuple[filterlib.Predicate, tp.Any]]:
    """``{filter: value}`` (or a bare value, meaning ``{...: value}``) as predicate rules."""
    if pattern is None:
        return []
    if not isinstance(pattern, tp.Mapping):
        pattern = {...: pattern}
    return [(filterlib.to_predicate(f), v) for f, v in pattern.items()]


@_with_random_methods
class Rngs(Pytree):
    """A named collection of ``RngStream``s with an optional ``default`` fallback stream."""

    def __init__(
        self,
        default: RngValue | RngStream | tp.Mapping[str, RngValue | RngStream] | None = None,
        **rngs: RngValue | RngStream,
    ):
        if isinstance(default, tp.Mapping):
            rngs = {**default, **rngs}
        elif default is not None:
            rngs = {**rngs, "default": default}
        for name, value in rngs.items():
            if isinstance(value, RngStream):
                value = value.key.get_value()
            setattr(self, name, RngStream(value, tag=name))

    def _get_stream(self, name: str, error_type: type[Exception]) -> RngStream:
        attributes = vars(self)
        stream = attributes.get(name)
        if not isinstance(stream, RngStream):
            stream = attributes.get("default")
        if not isinstance(stream, RngStream):
            raise error_type(f"No RngStream named '{name}' found in Rngs.")
        return stream

    def __getattr__(self, name: str) -> RngStream:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._get_stream(name, AttributeError)

    def __getitem__(self, name: str) -> RngStream:
        return self._get_stream(name, KeyError)

    def __call__(self) -> jax.Array:
        """The next key of the ``default`` stream."""
        return self.default()

    def __iter__(self) -> tp.Iterator[str]:
        return (name for name, value in vars(self).items() if isinstance(value, RngStream))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: tp.Any) -> bool:
        return isinstance(vars(self).get(name), RngStream)

    def items(self) -> tp.Iterator[tuple[str, RngStream]]:
        """(name, stream) pairs in creation order."""
        return ((name, vars(self)[name]) for name in self)

    def _derive(
        self,
        pattern: SplitPattern,
        matched: tp.Callable[[RngStream, tp.Any], RngStream],
        unmatched: tp.Callable[[RngStream], RngStream],
    ) -> Rngs:
        """A new Rngs whose streams come from ``matched`` (first matching rule) or ``unmatched``."""
        rules = _rules(pattern)
        streams: dict[str, RngStream] = {}
        for name, stream in self.items():
            value = _match(rules, (), stream)
            streams[name] = unmatched(stream) if value is MISSING or value is None else matched(stream, value)
        return Rngs(**streams)

    def split(self, k: tp.Mapping[filterlib.Filter, Shape | None] | Shape) -> Rngs:
        """New Rngs whose selected streams hold keys split into shape ``k`` (per filter if a mapping).

        None is not a form of ``k`` (``broadcast`` alone takes it): flax refuses it with an AttributeError."""
        if k is None:
            raise AttributeError("Rngs.split takes an int, a shape or a mapping of filters to those, not None")
        return self._derive(k, RngStream.split, lambda stream: stream)

    def broadcast(self, k: tp.Mapping[filterlib.Filter, Shape | None] | Shape | None) -> Rngs:
        """New Rngs whose selected streams hold their next key broadcast into shape ``k``."""
        return self._derive(k, RngStream.broadcast, lambda stream: stream)

    def fork(self, /, *, split: tp.Mapping[filterlib.Filter, Shape] | Shape | None = None) -> Rngs:
        """New Rngs whose streams are rooted at each stream's next key; ``split`` (deprecated)
        warns once for the call and once for each stream it splits, as flax."""
        if split is not None:
            _warn_fork_split()
        return self._derive(split, lambda stream, shape: stream.fork(split=shape), RngStream.fork)


# -- functions over the streams of a graph


def _streams(node: tp.Any, graph: bool | None) -> list[tuple[tuple, RngStream]]:
    """The (path, stream) pairs found in ``node`` (each shared stream once in graph mode)."""
    return [(path, x) for path, x in graphlib.iter_graph(node, graph=graph) if isinstance(x, RngStream)]


def backup_keys(node: tp.Any, /, *, graph: bool | None = None) -> list[tuple[RngStream, jax.Array]]:
    """``(stream, key)`` for every RngStream of ``node``: the keys to put back after a reseed."""
    return [(stream, stream.key.get_value()) for _, stream in _streams(node, graph=graph)]


def _replace_streams(node: tp.Any, replace: tp.Callable[[tuple, RngStream], RngStream], graph: bool) -> tp.Any:
    """A copy of ``node`` with every stream replaced by ``replace(path, stream)``.

    Variables are shared with ``node``, so drawing keys from a stream of the copy
    advances the original's counter, as it would in place.
    """

    def visit(path: tuple, x: tp.Any) -> tp.Any:
        return replace(path, x) if isinstance(x, RngStream) else x

    return graphlib.rebuild(visit, node, graph=graph)


def _selects_state(predicate: filterlib.Predicate, path: tuple, stream: RngStream) -> bool:
    """Whether a filter selects both Variables (key and count) of the stream at ``path``."""
    return predicate((*path, "key"), stream.key) and predicate((*path, "count"), stream.count)


@dataclasses.dataclass
class SplitBackups:
    """The streams changed in place by ``split_rngs``/``fork_rngs`` with their previous state.

    Iterable (see ``restore_rngs``) and a context manager that restores on exit.
    """

    backups: list[StreamBackup]

    def __iter__(self) -> tp.Iterator[StreamBackup]:
        return iter(self.backups)

    def __enter__(self) -> SplitBackups:
        return self

    def __exit__(self, *exc: tp.Any) -> None:
        restore_rngs(self)


def restore_rngs(backups: tp.Iterable[StreamBackup], /) -> None:
    """Puts back the keys and counts saved by in-place ``split_rngs``/``fork_rngs``.

    Each backup is read by index, stream first, then key and count, as flax reads them."""
    for backup in backups:
        stream = backup[0]
        stream.key.set_value(backup[1])
        if len(backup) > 2:
            stream.count.set_value(backup[2])


def _rewrite_streams(
    node: tp.Any,
    new_key: tp.Callable[[tuple, RngStream], jax.Array | None],
    graph: bool,
    graph_updates: bool,
) -> tp.Any:
    """Gives the streams for which ``new_key`` returns a key that key and a zero count.

    In place (returning ``SplitBackups``) in graph mode with graph updates; otherwise
    on a copy of ``node``, which is returned.
    """
    if graph and graph_updates:
        backups: list[StreamBackup] = []
        for path, stream in _streams(node, graph=True):
            key = new_key(path, stream)
            if key is not None:
                backups.append((stream, stream.key.get_value(), stream.count.get_value()))
                stream.key.set_value(key)
                stream.count.set_value(jnp.zeros(key.shape, dtype=jnp.uint32))
        return SplitBackups(backups)

    def replace(path: tuple, stream: RngStream) -> RngStream:
        key = new_key(path, stream)
        return stream if key is None else RngStream(key, tag=stream.tag)

    return _replace_streams(node, replace, graph)


def _decorator(apply: tp.Callable[[tp.Any], tp.Any], in_place: bool) -> tp.Callable[[F], F]:
    """Wraps ``f`` so that ``apply`` runs on its arguments first (restored afterwards if in place)."""

    def decorator(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
            if in_place:
                with apply((args, kwargs)):
                    return f(*args, **kwargs)
            args, kwargs = apply((args, kwargs))
            return f(*args, **kwargs)

        return tp.cast(F, wrapper)

    return decorator


def split_rngs(
    node: tp.Any = MISSING,
    /,
    *,
    splits: Shape,
    only: filterlib.Filter = ...,
    squeeze: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> SplitBackups | tp.Any | tp.Callable[[F], F]:
    """Splits the selected streams of ``node`` into keys of shape ``splits``.

    In graph mode with graph updates the streams change in place and the returned
    ``SplitBackups`` restores them; otherwise a copy with split streams is returned.
    Without ``node``, returns a decorator applying this to the function's arguments.
    """
    if squeeze and splits != 1:
        raise ValueError(f"squeeze=True is only supported for splits=1, got splits={splits!r}")
    graph, graph_updates = graphlib.resolve_mode(graph, graph_updates)
    predicate = filterlib.to_predicate(only)

    def new_key(path: tuple, stream: RngStream) -> jax.Array | None:
        if not _selects_state(predicate, path, stream):
            return None
        keys = jax.random.split(stream(), splits)
        return keys[0] if squeeze else keys

    return _rewrite_or_decorate(node, new_key, graph, graph_updates)


def fork_rngs(
    node: tp.Any = MISSING,
    /,
    *,
    split: tp.Mapping[filterlib.Filter, Shape | None] | Shape | None = None,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> SplitBackups | tp.Any | tp.Callable[[F], F]:
    """Re-roots the streams of ``node`` at their next key (or splits them, per ``split``).

    ``split=None`` forks every stream; a shape splits every stream; a mapping
    ``{filter: shape | None}`` splits (or, for ``None``, forks) the streams its first
    matching filter selects and leaves the others alone; splitting is deprecated, as
    for ``RngStream.fork``. In place or on a copy as for ``split_rngs``.
    """
    graph, graph_updates = graphlib.resolve_mode(graph, graph_updates)
    rules = _rules(split) if split is not None else [(filterlib.Everything(), None)]

    def new_key(path: tuple, stream: RngStream) -> jax.Array | None:
        for predicate, shape in rules:
            if _selects_state(predicate, path, stream):
                key = stream()
                if shape is None:
                    return key
                _warn_fork_split()
                return jax.random.split(key, shape)
        return None

    return _rewrite_or_decorate(node, new_key, graph, graph_updates)


def _rewrite_or_decorate(
    node: tp.Any, new_key: tp.Callable[[tuple, RngStream], jax.Array | None], graph: bool, graph_updates: bool
) -> tp.Any:
    """``node`` with its streams rewritten by ``new_key`` (see :func:`_rewrite_streams`); without
    a node, a decorator that does it to a function's arguments."""

    def apply(target: tp.Any) -> tp.Any:
        return _rewrite_streams(target, new_key, graph, graph_updates)

    if node is MISSING:
        return _decorator(apply, in_place=graph and graph_updates)
    return apply(node)


def with_rngs(
    node: tp.Any = MISSING,
    /,
    *,
    split: tp.Mapping[filterlib.Filter, Shape] | Shape | None = None,
    fork: filterlib.Filter | tp.Sequence[filterlib.Filter] | None = None,
    broadcast: tp.Mapping[filterlib.Filter, Shape] | Shape | None = None,
    only: filterlib.Filter = True,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> tp.Any:
    """A copy of ``node`` whose streams are split, broadcast or forked by filter rules.

    For each stream selected by ``only``: the first matching ``split`` rule splits it,
    else the first matching ``broadcast`` rule broadcasts it, else it is forked if
    ``fork`` selects it, else it is copied unchanged. Without ``node``, returns a
    decorator applying this to the function's arguments.
    """
    graph, graph_updates = graphlib.resolve_mode(graph, graph_updates)
    if graph and graph_updates:
        raise NotImplementedError(
            "graph=True and graph_updates=True is not supported for `with_rngs`: "
            "pass graph=False or graph_updates=False"
        )
    only_predicate = filterlib.to_predicate(only)
    split_rules = _rules(split)
    broadcast_rules = _rules(broadcast)
    fork_predicate = filterlib.to_predicate(fork)
    refuse_conflicts = _conflict_check(split, broadcast, fork)

    def replace(path: tuple, stream: RngStream) -> RngStream:
        if not only_predicate(path, stream):
            return stream
        refuse_conflicts(path, stream)
        shape = _match(split_rules, path, stream)
        if shape is not MISSING:
            return stream.split(shape)
        shape = _match(broadcast_rules, path, stream)
        if shape is not MISSING:
            return stream.broadcast(shape)
        if fork_predicate(path, stream):
            return stream.fork()
        return stream

    def apply(target: tp.Any) -> tp.Any:
        return _replace_streams(target, replace, graph)

    if node is MISSING:
        return _decorator(apply, in_place=False)
    return apply(node)


def _filters_of(pattern: SplitPattern) -> list[filterlib.Filter]:
    """The filters of a split or broadcast pattern, in order (a bare shape is ``{...: shape}``)."""
    if pattern is None:
        return []
    return list(pattern) if isinstance(pattern, tp.Mapping) else [...]


def _conflict_check(
    split: SplitPattern, broadcast: SplitPattern, fork: filterlib.Filter | tp.Sequence[filterlib.Filter] | None
) -> tp.Callable[[tuple, RngStream], None]:
    """A check that raises ValueError, naming the stream's path and the rules, when the first
    matching filters of two of with_rngs' rules (split, broadcast, fork) are both specific:
    neither ``...`` nor ``True``, which match every stream and give way to a specific rule."""
    forks = [] if fork is None else [fork] if isinstance(fork, str) or not isinstance(fork, tp.Sequence) else list(fork)
    filters = {"split": _filters_of(split), "broadcast": _filters_of(broadcast), "fork": forks}
    predicates = {rule: [(f, filterlib.to_predicate(f)) for f in found] for rule, found in filters.items()}

    def check(path: tuple, stream: RngStream) -> None:
        matched = {}
        for rule, candidates in predicates.items():
            first = next((f for f, predicate in candidates if predicate(path, stream)), MISSING)
            if first is not MISSING:
                matched[rule] = first
        specific = [rule for rule, f in matched.items() if f is not ... and f is not True]
        if len(specific) > 1:
            described = "\n".join(f"  - {rule} matches filter {f!r}" for rule, f in matched.items())
            raise ValueError(f"RngStream at path {path} matches multiple rules:\n{described}")

    return check


RESEED_POLICIES = ("scalars_only", "match_shape")
"""The named policies of ``reseed``; a callable is the third form."""


def reseed(
    node: tp.Any, /, *, graph: bool | None = None, policy: ReseedPolicy = "scalars_only", **stream_keys: RngValue
) -> None:
    """Gives the streams of ``node`` whose tag is a keyword a new key and a zero count, in place.

    A stream reseeded with seed ``s`` produces the keys of a fresh ``RngStream(s)``
    after its first draw, i.e. its new root key is ``fold_in(key(s), 0)``. Streams
    with non-scalar keys need ``policy='match_shape'`` (split the new key to the
    shape) or a callable ``(path, key, shape) -> keys``.
    """
    if not callable(policy) and policy not in RESEED_POLICIES:
        raise ValueError(f'policy must be "scalars_only", "match_shape" or a callable, got {policy!r}')
    for path, stream in _streams(node, graph=graph):
        if stream.tag not in stream_keys:
            continue
        key = RngStream(stream_keys[stream.tag], tag=stream.tag)()
        shape = stream.key.get_value().shape
        if callable(policy):
            key = policy(path, key, shape)
        elif policy == "match_shape":
            key = jax.random.split(key, shape) if shape else key
        elif shape:
            raise ValueError(
                f"Cannot reseed RngStream at path {path}: its key has shape {shape}, not (). "
                "Pass policy='match_shape' to split the new key to that shape, or a "
                "custom policy (path, key, shape) -> keys."
            )
        stream.key.set_value(key)
        stream.count.set_value(jnp.zeros(shape, dtype=jnp.uint32))
