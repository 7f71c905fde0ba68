"""Module graphs, Variables and arrays drawn through the implementation under test.

Every strategy that makes an NNX object takes ``nnx``, the implementation module (the
``nnx`` fixture), and builds only with its public names, so the same strategy draws
flax objects under ``--impl flax.nnx`` and reference objects under ``--impl
nnx_reference``. Sizes stay small (shapes of at most 2 x 3, graphs of a few nodes) so
that shrunk counterexamples read at a glance.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

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
