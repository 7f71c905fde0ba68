"""Hypothesis strategies for NNX objects, built through the implementation under test.

Every strategy that makes an NNX object takes ``nnx``, the implementation module (the
``nnx`` fixture), and builds only with its public names, so the same strategy draws
flax objects under ``--impl flax.nnx`` and reference objects under ``--impl
nnx_reference``. Sizes stay small (shapes of at most 2 x 3, graphs of a few nodes) so
that shrunk counterexamples read at a glance.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

ATTRIBUTE_NAMES = ("a", "b", "c", "d", "kernel", "bias", "w")
"""Attribute names of drawn Modules: short, valid, and never a Module method's name."""

TAGS = ("alpha", "beta")
"""Values of the ``tag`` metadata of drawn Variables, the strings that str filters match."""

STREAM_NAMES = ("default", "params", "dropout", "noise")
"""Stream names of drawn Rngs."""

MODE_FLAGS = ("deterministic", "use_running_average")
"""The attributes that ``Module.train`` and ``Module.eval`` set."""

DTYPES = ("float32", "int32")

MAX_DEPTH = 2
"""How deep drawn Module graphs nest: the root's Modules may hold Modules, no deeper."""


class Classes(NamedTuple):
    """User classes of one implementation, the kinds a user defines on top of NNX."""

    node: type
    """A Module whose constructor sets the keyword arguments as attributes."""
    record: type
    """A Pytree (not a Module) whose constructor sets the keyword arguments as attributes."""
    custom_variable: type
    """A direct Variable subclass, as the variables guide shows for user collections."""
    custom_param: type
    """A Param subclass: type filters on Param must match it too."""


def _set_attributes(self: Any, **attributes: Any) -> None:
    for name, value in attributes.items():
        setattr(self, name, value)


@functools.cache
def _classes_for(module_base: type, pytree_base: type, variable_base: type, param_base: type) -> Classes:
    return Classes(
        node=type("Node", (module_base,), {"__init__": _set_attributes, "__module__": __name__}),
        record=type("Record", (pytree_base,), {"__init__": _set_attributes, "__module__": __name__}),
        custom_variable=type("Counter", (variable_base,), {"__module__": __name__}),
        custom_param=type("FrozenParam", (param_base,), {"__module__": __name__}),
    )


def classes(nnx: Any) -> Classes:
    """The user classes defined on ``nnx``'s bases (one set per implementation)."""
    return _classes_for(nnx.Module, nnx.Pytree, nnx.Variable, nnx.Param)


def variable_types(nnx: Any) -> st.SearchStrategy[type]:
    """Every documented Variable type, a custom Variable subclass and a Param subclass."""
    custom = classes(nnx)
    return st.sampled_from(
        [
            nnx.Param,
            nnx.BatchStat,
            nnx.Cache,
            nnx.Intermediate,
            nnx.Perturbation,
            custom.custom_variable,
            custom.custom_param,
        ]
    )


shapes: st.SearchStrategy[tuple[int, ...]] = st.lists(st.integers(min_value=1, max_value=3), max_size=2).map(tuple)
"""Array shapes of rank 0 to 2 with sides 1 to 3; shrinks towards a scalar."""


@st.composite
def arrays(draw: st.DrawFn) -> jnp.ndarray:
    """A small float32 or int32 array of small integer values (exact comparisons)."""
    shape = draw(shapes, label="shape")
    dtype = draw(st.sampled_from(DTYPES), label="dtype")
    size = int(np.prod(shape, dtype=int))
    values = draw(st.lists(st.integers(-8, 8), min_size=size, max_size=size), label="values")
    return jnp.asarray(np.array(values).reshape(shape), dtype=dtype)


metadata: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {},
    optional={
        "tag": st.sampled_from(TAGS),
        "color": st.sampled_from(["red", "blue"]),
        "axis_size": st.integers(1, 4),
    },
)
"""User metadata of a Variable: a ``tag`` (what str filters match) and free-form keys."""


@st.composite
def variables(draw: st.DrawFn, nnx: Any, types: st.SearchStrategy[type] | None = None) -> Any:
    """A Variable of a drawn type, with a drawn array value and drawn metadata."""
    variable_type = draw(types if types is not None else variable_types(nnx), label="variable type")
    value = draw(arrays(), label="variable value")
    return variable_type(value, **draw(metadata, label="variable metadata"))


static_values: st.SearchStrategy[Any] = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["relu", "gelu"]),
    st.booleans(),
    st.tuples(st.integers(1, 3), st.integers(1, 3)),
)
"""Hashable non-array attribute values: static in both graph and tree mode."""


class _GraphBuilder:
    """Draws one Module graph and remembers its Modules and Variables in creation order."""

    def __init__(self, draw: st.DrawFn, nnx: Any, mode_flags: bool, sequences: bool) -> None:
        self.draw = draw
        self.nnx = nnx
        self.mode_flags = mode_flags
        self.sequences = sequences
        self.classes = classes(nnx)
        self.modules: list[Any] = []
        self.variables: list[Any] = []

    def variable(self) -> Any:
        variable = self.draw(variables(self.nnx), label="variable")
        self.variables.append(variable)
        return variable

    def module(self, depth: int) -> Any:
        names = self.draw(st.lists(st.sampled_from(ATTRIBUTE_NAMES), max_size=3, unique=True), label="attribute names")
        kinds = ["variable", "static", "dict"] + (["tuple"] if self.sequences else [])
        if depth < MAX_DEPTH:
            kinds += ["module", "record", "list", "nnx_dict", "sequential"]
        if self.mode_flags:
            kinds.append("dropout")
        attributes = {
            name: self.attribute(self.draw(st.sampled_from(kinds), label=f"kind of {name}"), depth) for name in names
        }
        if self.mode_flags:
            for flag in MODE_FLAGS:
                if self.draw(st.booleans(), label=f"module has {flag}"):
                    attributes[flag] = self.draw(st.booleans(), label=f"initial {flag}")
        node = self.classes.node(**attributes)
        self.modules.append(node)
        return node

    def attribute(self, kind: str, depth: int) -> Any:
        nnx, draw = self.nnx, self.draw
        few = st.integers(1, 2)
        if kind == "variable":
            return self.variable()
        if kind == "static":
            return draw(static_values, label="static value")
        if kind == "tuple":
            return nnx.data(tuple(self.variable() for _ in range(draw(few, label="tuple length"))))
        if kind == "dict":
            keys = draw(st.lists(st.sampled_from(["p", "q"]), min_size=1, unique=True), label="dict keys")
            return nnx.data({key: self.variable() for key in keys})
        if kind == "module":
            return self.module(depth + 1)
        if kind == "record":
            return self.classes.record(value=self.variable(), size=draw(st.integers(1, 3), label="record size"))
        if kind == "list":
            items = []
            for _ in range(draw(few, label="list length")):
                as_module = not self.sequences or draw(st.booleans(), label="list item is a module")
                items.append(self.module(depth + 1) if as_module else self.variable())
            return nnx.List(items)
        if kind == "nnx_dict":
            keys = draw(st.lists(st.sampled_from(["x", "y"]), min_size=1, unique=True), label="Dict keys")
            return nnx.Dict({key: self.variable() for key in keys})
        if kind == "dropout":
            module = nnx.Dropout(0.5, deterministic=draw(st.booleans(), label="Dropout deterministic"))
            self.modules.append(module)
            return module
        if kind == "sequential":
            return nnx.Sequential(*(self.module(depth + 1) for _ in range(draw(few, label="layers"))))
        raise AssertionError(f"unknown attribute kind {kind!r}")

    def add_shared_references(self, root: Any, cycles: bool) -> None:
        """Attach second references to existing Variables (from any Module) and
        sub-Modules (from the root, so no cycle forms), and optionally a back-edge."""
        targets = self.variables + self.modules[:-1]  # the root is created last
        if targets:
            for index in range(self.draw(st.integers(0, 2), label="number of shared references")):
                target = self.draw(st.sampled_from(targets), label="shared reference")
                holder = root
                if isinstance(target, self.nnx.Variable):
                    holder = self.draw(st.sampled_from(self.modules), label="holder of a shared reference")
                setattr(holder, f"shared_{index}", target)
        if cycles and len(self.modules) > 1 and self.draw(st.booleans(), label="add a cycle"):
            holder = self.draw(st.sampled_from(self.modules[:-1]), label="holder of the back-edge to the root")
            holder.parent = root


@st.composite
def graphs(
    draw: st.DrawFn,
    nnx: Any,
    *,
    shared: bool = False,
    cycles: bool = False,
    mode_flags: bool = False,
    sequences: bool = True,
) -> Any:
    """A Module graph: nested Modules, Pytrees, List/Dict/Sequential, tuples and dicts of
    Variables and static attributes; with ``shared`` some Variables or Modules are
    referenced twice, with ``cycles`` a sub-Module may point back to the root.

    Without ``shared`` and ``cycles`` the graph is a tree, valid in tree mode too. With
    ``mode_flags`` some Modules carry ``deterministic`` and/or ``use_running_average``
    (the attributes that train() and eval() set) and Dropout layers may appear. With
    ``sequences=False`` no Variable sits directly in a tuple or List (a Variable can be
    popped only from a mapping-like node).
    """
    builder = _GraphBuilder(draw, nnx, mode_flags, sequences)
    root = builder.module(depth=0)
    if shared or cycles:
        builder.add_shared_references(root, cycles)
    return root


def trees(nnx: Any) -> st.SearchStrategy[Any]:
    """A Module graph with no shared references: valid in both graph and tree mode."""
    return graphs(nnx)


def modes() -> st.SearchStrategy[bool]:
    """The ``graph`` argument of the graph API: True (graph mode) or False (tree mode)."""
    return st.booleans()


@dataclass(frozen=True)
class PathEndsWith:
    """A callable filter: matches Variables whose path ends with ``name``."""

    name: str

    def __call__(self, path: tuple[Any, ...], value: Any) -> bool:
        return bool(path) and path[-1] == self.name


def filter_atoms(nnx: Any) -> st.SearchStrategy[Any]:
    """Single filters: a type, a str tag, a callable, ``...``, True, False and the
    filter classes OfType, WithTag, PathContains, Everything, Nothing."""
    return st.one_of(
        variable_types(nnx),
        st.sampled_from(TAGS),
        st.sampled_from(ATTRIBUTE_NAMES).map(PathEndsWith),
        st.sampled_from([..., True, False]),
        variable_types(nnx).map(nnx.OfType),
        st.sampled_from(TAGS).map(nnx.WithTag),
        st.sampled_from(ATTRIBUTE_NAMES).map(nnx.PathContains),
        st.sampled_from([nnx.Everything(), nnx.Nothing()]),
    )


def filters(nnx: Any) -> st.SearchStrategy[Any]:
    """A filter: an atom or an Any/All/Not composition of filters (at most 4 atoms)."""

    def compose(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        groups = st.lists(children, min_size=1, max_size=3)
        return st.one_of(
            children.map(nnx.Not),
            groups.map(lambda fs: nnx.Any(*fs)),
            groups.map(lambda fs: nnx.All(*fs)),
        )

    return st.recursive(filter_atoms(nnx), compose, max_leaves=4)


def filter_sequences(nnx: Any, *, catch_all: bool) -> st.SearchStrategy[tuple[Any, ...]]:
    """The filters of a split: one to two filters, then ``...`` if ``catch_all``.
    Bare ``...`` and ``True`` only appear last (they are allowed only there)."""
    leading = filters(nnx).filter(lambda f: f is not ... and f is not True)
    drawn = st.lists(leading, min_size=0 if catch_all else 1, max_size=2).map(tuple)
    return drawn.map(lambda fs: (*fs, ...)) if catch_all else drawn


rng_seeds: st.SearchStrategy[dict[str, int]] = st.dictionaries(
    st.sampled_from(STREAM_NAMES), st.integers(0, 2**31 - 1), min_size=1, max_size=3
)
"""Seeds of an Rngs by stream name: one to three streams."""


# Stateful programs: what the transform laws run eagerly and under each transform.

TRANSFORM_VALUE_TARGETS = ("params.w", "state.stat")
"""The float Variables a drawn operation updates: a Param and a BatchStat, both of shape (2,)."""

SOWN_NAMES = ("h", "z")
"""Names under which drawn operations sow Intermediates."""

small_floats: st.SearchStrategy[list[float]] = st.lists(st.integers(-4, 4).map(float), min_size=2, max_size=2)
"""Two small integral floats: initial values of a stateful model's Variables."""


def stateful_models(nnx: Any) -> st.SearchStrategy[Any]:
    """A Module ``params.w`` (Param), ``state.stat`` (BatchStat) and ``state.rngs`` (an
    Rngs with ``params`` and ``default`` streams), the state that drawn operations change.

    Params and the rest sit in two sub-Modules so that tree-mode ``grad``, which
    differentiates whole arguments, can take them as separate arguments."""
    node = classes(nnx).node

    def build(w: list[float], stat: list[float], seeds: tuple[int, int]) -> Any:
        params = node(w=nnx.Param(jnp.asarray(w, dtype="float32")))
        rngs = nnx.Rngs(params=seeds[0], default=seeds[1])
        return node(params=params, state=node(stat=nnx.BatchStat(jnp.asarray(stat, dtype="float32")), rngs=rngs))

    seeds = st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
    return st.builds(build, small_floats, small_floats, seeds)


def _variable_at(model: Any, target: str) -> Any:
    part, name = target.split(".")
    return getattr(getattr(model, part), name)


@dataclass(frozen=True)
class Scale:
    """``v[...] = v[...] * factor`` on the Variable at ``target``."""

    target: str
    factor: float

    def __call__(self, nnx: Any, model: Any) -> None:
        variable = _variable_at(model, self.target)
        variable[...] = variable[...] * self.factor


@dataclass(frozen=True)
class Shift:
    """``v[...] += amount`` on the Variable at ``target``."""

    target: str
    amount: float

    def __call__(self, nnx: Any, model: Any) -> None:
        variable = _variable_at(model, self.target)
        variable[...] += self.amount


@dataclass(frozen=True)
class AddNoise:
    """Adds uniform noise drawn from the Rngs stream ``stream`` to the Variable at ``target``."""

    target: str
    stream: str

    def __call__(self, nnx: Any, model: Any) -> None:
        variable = _variable_at(model, self.target)
        key = getattr(model.state.rngs, self.stream)()
        variable[...] = variable[...] + jax.random.uniform(key, variable[...].shape)


@dataclass(frozen=True)
class Sow:
    """``model.sow(nnx.Intermediate, name, 2 * w)``: a structural change (the first sow
    under a name adds an Intermediate attribute)."""

    name: str

    def __call__(self, nnx: Any, model: Any) -> None:
        model.sow(nnx.Intermediate, self.name, model.params.w[...] * 2)


Operation = Scale | Shift | AddNoise | Sow

value_operations: st.SearchStrategy[Operation] = st.one_of(
    st.builds(Scale, st.sampled_from(TRANSFORM_VALUE_TARGETS), st.sampled_from([2.0, -1.0, 0.5])),
    st.builds(Shift, st.sampled_from(TRANSFORM_VALUE_TARGETS), st.integers(-3, 3).map(float)),
    st.builds(AddNoise, st.sampled_from(TRANSFORM_VALUE_TARGETS), st.sampled_from(["params", "default"])),
)
"""An in-place update of a Variable's value: scaling, ``+=``, or noise from an Rngs draw."""


@dataclass(frozen=True)
class Program:
    """A stateful function: operations applied in order to a :func:`stateful_models` model."""

    operations: tuple[Operation, ...]

    def __call__(self, nnx: Any, model: Any) -> None:
        for operation in self.operations:
            operation(nnx, model)


@st.composite
def programs(draw: st.DrawFn, *, structural: bool = False, min_size: int = 1) -> Program:
    """A :class:`Program` of ``min_size`` to 4 operations; sows only with ``structural``."""
    kinds = value_operations
    if structural:
        kinds = st.one_of(value_operations, st.builds(Sow, st.sampled_from(SOWN_NAMES)))
    count = draw(st.integers(min_size, 4), label="number of operations")
    return Program(tuple(draw(kinds, label=f"operation {index}") for index in range(count)))


# nn layer arguments: what parity tests build the same layer from in two implementations.
# Plain values only (no nnx objects), so that one draw builds the layer in both.

LAYER_DTYPES = (jnp.float32, jnp.bfloat16)
"""The parameter and computation dtypes of drawn layers."""

seeds: st.SearchStrategy[int] = st.integers(0, 2**31 - 1)
"""Seeds of an Rngs or of a drawn input."""

# Few distinct sizes: JAX compiles each operation once per shape, and compiling is what
# a parity example spends its time on.

features: st.SearchStrategy[int] = st.sampled_from([1, 3])
"""Feature sizes of drawn layers: small, so a failing layer prints in a few lines."""

batch_shapes: st.SearchStrategy[tuple[int, ...]] = st.sampled_from([(2,), (1, 2)])
"""Leading (batch) axes of a drawn layer input: one or two axes."""


@dataclass(frozen=True)
class LayerArgs:
    """The arguments of one nn layer (``rngs`` aside) and the shape of an input it accepts."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    input_shape: tuple[int, ...]

    def build(self, nnx: Any, layer: str, rngs: Any) -> Any:
        """``nnx.<layer>(*args, **kwargs, rngs=rngs)``."""
        return getattr(nnx, layer)(*self.args, **self.kwargs, rngs=rngs)


@st.composite
def dtype_args(draw: st.DrawFn) -> dict[str, Any]:
    """``param_dtype`` and ``dtype`` (None: the computation follows the inputs and params)."""
    return {
        "param_dtype": draw(st.sampled_from(LAYER_DTYPES), label="param_dtype"),
        "dtype": draw(st.sampled_from((None, *LAYER_DTYPES)), label="dtype"),
    }


@st.composite
def linear_args(draw: st.DrawFn) -> LayerArgs:
    """``Linear(in_features, out_features, use_bias=..., dtypes)`` and a batched input."""
    in_features = draw(features, label="in_features")
    out_features = draw(features, label="out_features")
    kwargs = {"use_bias": draw(st.booleans(), label="use_bias"), **draw(dtype_args())}
    return LayerArgs((in_features, out_features), kwargs, draw(batch_shapes, label="batch") + (in_features,))


@st.composite
def linear_general_args(draw: st.DrawFn) -> LayerArgs:
    """``LinearGeneral`` contracting the last one or two input axes into one or two output axes."""
    in_shape = tuple(draw(st.lists(features, min_size=1, max_size=2), label="in_features"))
    out_shape = tuple(draw(st.lists(features, min_size=1, max_size=2), label="out_features"))
    axis = tuple(range(-len(in_shape), 0))
    kwargs = {"axis": axis, "use_bias": draw(st.booleans(), label="use_bias"), **draw(dtype_args())}
    return LayerArgs((in_shape, out_shape), kwargs, draw(batch_shapes, label="batch") + in_shape)


EINSUM_FORMS = {
    "nta,ab->ntb": ("ab", "b"),
    "nta,hab->nthb": ("hab", "hb"),
    "nta,ab->tnb": ("ab", "b"),
}
"""Einsum equations over an input ``nta``, with the axes of their kernel and bias."""


@st.composite
def einsum_args(draw: st.DrawFn) -> LayerArgs:
    """``Einsum(equation, kernel_shape, bias_shape or None)`` and an input of shape (n, t, a)."""
    equation = draw(st.sampled_from(sorted(EINSUM_FORMS)), label="equation")
    sizes = {axis: draw(features, label=f"size of {axis}") for axis in "ntabh"}
    kernel_axes, bias_axes = EINSUM_FORMS[equation]
    bias = tuple(sizes[axis] for axis in bias_axes) if draw(st.booleans(), label="use_bias") else None
    kernel = tuple(sizes[axis] for axis in kernel_axes)
    return LayerArgs((equation, kernel, bias), draw(dtype_args()), (sizes["n"], sizes["t"], sizes["a"]))


CONV_PADDINGS = ("SAME", "VALID", "CIRCULAR", "CAUSAL", "REFLECT", 1, ((1, 0),))
"""Paddings of drawn Convs: the named modes, an int, and explicit (low, high) pairs per axis."""

CONV_TRANSPOSE_PADDINGS = ("SAME", "VALID", "CIRCULAR", 1)
"""Paddings of drawn ConvTransposes."""


@st.composite
def conv_args(draw: st.DrawFn, *, transpose: bool = False) -> LayerArgs:
    """``Conv`` (or ``ConvTranspose``) over 1 or 2 spatial axes of 3 or 5, with drawn kernel
    sizes, strides, padding, dilation, feature groups (Conv) or ``transpose_kernel``."""
    rank = draw(st.integers(1, 2), label="spatial rank")
    kernel_size = tuple(draw(st.lists(st.sampled_from([1, 3]), min_size=rank, max_size=rank), label="kernel_size"))
    spatial = tuple(draw(st.lists(st.sampled_from([3, 5]), min_size=rank, max_size=rank), label="spatial shape"))
    kwargs: dict[str, Any] = {
        "strides": draw(st.integers(1, 2), label="strides"),
        "use_bias": draw(st.booleans(), label="use_bias"),
        **draw(dtype_args()),
    }
    paddings = CONV_TRANSPOSE_PADDINGS if transpose else CONV_PADDINGS
    if rank > 1:  # causal padding is defined for one spatial axis only
        paddings = tuple(p for p in paddings if p != "CAUSAL")
    padding = draw(st.sampled_from(paddings), label="padding")
    kwargs["padding"] = padding * rank if isinstance(padding, tuple) else padding
    if transpose:
        kwargs["transpose_kernel"] = draw(st.booleans(), label="transpose_kernel")
        groups = 1
    else:
        kwargs["kernel_dilation"] = draw(st.integers(1, 2), label="kernel_dilation")
        groups = draw(st.integers(1, 2), label="feature_group_count")
        kwargs["feature_group_count"] = groups
    in_features = groups * draw(st.integers(1, 2), label="in_features per group")
    out_features = groups * draw(st.integers(1, 2), label="out_features per group")
    shape = draw(batch_shapes, label="batch") + spatial + (in_features,)
    return LayerArgs((in_features, out_features, kernel_size), kwargs, shape)


@st.composite
def embed_args(draw: st.DrawFn) -> LayerArgs:
    """``Embed(num_embeddings, features)``; ``input_shape`` is the shape of the ids it looks up."""
    kwargs = draw(dtype_args())
    args = (draw(st.sampled_from([1, 5]), label="num_embeddings"), draw(features, label="features"))
    return LayerArgs(args, kwargs, draw(batch_shapes, label="batch"))


@st.composite
def norm_args(draw: st.DrawFn, layer: str) -> LayerArgs:
    """The arguments of the normalization layer ``layer`` and a (batch, h, w, features) input.

    GroupNorm keeps its default ``reduction_axes``: with custom ones flax normalizes
    differently from its documentation by design, so they are not a parity case."""
    kwargs: dict[str, Any] = {"epsilon": draw(st.sampled_from([1e-6, 1e-3]), label="epsilon"), **draw(dtype_args())}
    if layer != "RMSNorm":
        kwargs["use_bias"] = draw(st.booleans(), label="use_bias")
    kwargs["use_scale"] = draw(st.booleans(), label="use_scale")
    if layer in ("BatchNorm", "LayerNorm", "RMSNorm"):
        kwargs["use_fast_variance"] = draw(st.booleans(), label="use_fast_variance")
    if layer == "BatchNorm":
        kwargs["momentum"] = draw(st.sampled_from([0.9, 0.99]), label="momentum")
        kwargs["use_running_average"] = draw(st.booleans(), label="use_running_average")
    if layer in ("LayerNorm", "RMSNorm"):
        kwargs["reduction_axes"] = draw(st.sampled_from([-1, (1, 2, 3), (2, 3)]), label="reduction_axes")
    num_features = draw(features, label="num_features")
    if layer == "GroupNorm":
        groups = draw(st.integers(1, 2), label="num_groups")
        kwargs["num_groups"] = groups
        num_features *= groups
    spatial = tuple(draw(st.lists(st.sampled_from([1, 3]), min_size=2, max_size=2), label="spatial shape"))
    batch = draw(st.sampled_from([1, 2]), label="batch")
    return LayerArgs((num_features,), kwargs, (batch, *spatial, num_features))


@st.composite
def attention_args(draw: st.DrawFn) -> LayerArgs:
    """``MultiHeadAttention(num_heads, in_features)`` for self-attention over 3 positions,
    without decoding and dropout, with drawn head sizes, output size, biases,
    qk-normalization and dtypes (few sizes: an attention example compiles many operations)."""
    num_heads = draw(st.integers(1, 2), label="num_heads")
    in_features = num_heads * draw(st.sampled_from([1, 2]), label="in features per head")
    kwargs: dict[str, Any] = {
        "qkv_features": num_heads * draw(st.sampled_from([1, 2]), label="qkv features per head"),
        "out_features": draw(st.sampled_from([None, 3]), label="out_features"),
        "use_bias": draw(st.booleans(), label="use_bias"),
        "normalize_qk": draw(st.booleans(), label="normalize_qk"),
        "decode": False,
        **draw(dtype_args()),
    }
    return LayerArgs((num_heads, in_features), kwargs, draw(batch_shapes, label="batch") + (3, in_features))


RECURRENT_CELLS = ("LSTMCell", "OptimizedLSTMCell", "GRUCell", "SimpleCell")


@st.composite
def cell_args(draw: st.DrawFn) -> LayerArgs:
    """``<Cell>(in_features, hidden_features, dtypes)`` and a (batch, time, in_features) input."""
    in_features = draw(features, label="in_features")
    hidden = draw(features, label="hidden_features")
    length = draw(st.sampled_from([1, 3]), label="sequence length")
    return LayerArgs((in_features, hidden), draw(dtype_args()), (draw(st.sampled_from([1, 2]), label="batch"), length, in_features))


@st.composite
def lora_args(draw: st.DrawFn) -> LayerArgs:
    """``LoRA(in_features, lora_rank, out_features, dtypes)`` and a batched input."""
    in_features = draw(features, label="in_features")
    args = (in_features, draw(st.sampled_from([1, 2]), label="lora_rank"), draw(features, label="out_features"))
    return LayerArgs(args, draw(dtype_args()), draw(batch_shapes, label="batch") + (in_features,))


@st.composite
def dropout_args(draw: st.DrawFn) -> LayerArgs:
    """``Dropout(rate, broadcast_dims=...)`` and a batched input of 1 to 4 features."""
    kwargs = {"broadcast_dims": draw(st.sampled_from([(), (0,)]), label="broadcast_dims")}
    shape = draw(batch_shapes, label="batch") + (draw(features, label="features"),)
    return LayerArgs((draw(st.sampled_from([0.0, 0.25, 0.5, 0.9]), label="rate"),), kwargs, shape)


def layer_input(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A float32 standard normal input of ``shape`` drawn from ``seed`` (by NumPy: no compiling)."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
