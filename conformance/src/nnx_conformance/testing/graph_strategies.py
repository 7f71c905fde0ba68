"""Hypothesis strategies for differential tests: recipes of NNX graphs, built on either side.

A differential test must build the same objects with two implementations, so these
strategies draw *recipes* (plain data: Variable types by name, NumPy values, attribute
layouts, extra references) and :func:`build` makes the objects with one implementation's
public names and the user classes of ``strategies.nodes``. Sizes stay small so that
shrunk counterexamples read at a glance.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

from .strategies.nodes import arrays, classes

VARIABLE_TYPES = ("Param", "BatchStat", "Cache", "Intermediate", "Counter")
"""Variable types of drawn graphs by name; ``Counter`` is a user Variable subclass."""

ATTRIBUTE_NAMES = ("a", "b", "c", "kernel", "bias")
MAX_DEPTH = 2
MODE_KEYWORDS: dict[str, dict[str, bool]] = {
    "graph mode with graph updates": {"graph": True, "graph_updates": True},
    "graph mode without graph updates": {"graph": True, "graph_updates": False},
    "tree mode": {"graph": False},
}
"""The three modes a transform runs in, by name, as the keywords that choose each per call."""
NO_UPDATES_MODE_KEYWORDS = {name: kw for name, kw in MODE_KEYWORDS.items() if kw.get("graph_updates") is not True}
"""The modes without graph updates (jit_partial and the control-flow callables refuse them)."""


def variable_type(nnx: Any, name: str) -> type:
    """The Variable type of ``nnx`` a recipe names."""
    return classes(nnx).custom_variable if name == "Counter" else getattr(nnx, name)


@dataclass(frozen=True, eq=False)
class VariableRecipe:
    """A Variable: its type's name, its value and its metadata."""

    type_name: str
    value: np.ndarray
    metadata: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, eq=False)
class NodeRecipe:
    """A graph node: a user Module (``module``), a Pytree (``record``), an ``nnx.List``
    (``list``) or an ``nnx.data`` dict (``dict``), with its children by attribute name."""

    kind: str
    children: tuple[tuple[str, Any], ...]
    """(name, VariableRecipe | NodeRecipe | static value) pairs."""


@dataclass(frozen=True)
class Alias:
    """A second reference: node number ``holder`` gets attribute ``name`` pointing at
    ``target`` (a Variable number, or a node number when ``to_node``); numbers count
    creation order, depth first, the root last."""

    holder: int
    name: str
    target: int
    to_node: bool


@dataclass(frozen=True, eq=False)
class GraphRecipe:
    """A Module graph to build on either implementation."""

    root: NodeRecipe
    aliases: tuple[Alias, ...] = field(default=())

    def __repr__(self) -> str:
        return f"GraphRecipe({_show(self.root)}, aliases={list(self.aliases)})"


def _show(part: Any) -> str:
    if isinstance(part, VariableRecipe):
        value = f"{part.value.dtype}{list(part.value.shape)}={part.value.tolist()}"
        return f"{part.type_name}({value}{dict(part.metadata) or ''})"
    if isinstance(part, NodeRecipe):
        return f"{part.kind}({', '.join(f'{k}={_show(v)}' for k, v in part.children)})"
    return repr(part)


@dataclass
class Built:
    """A built graph: its root and its nodes and Variables in creation order."""

    root: Any
    nodes: list[Any]
    variables: list[Any]


def build(nnx: Any, recipe: GraphRecipe) -> Built:
    """The graph ``recipe`` describes, made with ``nnx``."""
    built = Built(None, [], [])
    built.root = _build(nnx, recipe.root, built)
    for alias in recipe.aliases:
        target = built.nodes[alias.target] if alias.to_node else built.variables[alias.target]
        setattr(built.nodes[alias.holder], alias.name, target)
    return built


def _build(nnx: Any, part: Any, built: Built) -> Any:
    if isinstance(part, VariableRecipe):
        variable = variable_type(nnx, part.type_name)(jnp.asarray(part.value), **dict(part.metadata))
        built.variables.append(variable)
        return variable
    if not isinstance(part, NodeRecipe):
        return part
    children = {name: _build(nnx, child, built) for name, child in part.children}
    user = classes(nnx)
    if part.kind == "list":
        node = nnx.List(list(children.values()))
    elif part.kind == "dict":
        return nnx.data(children)
    else:
        node = (user.record if part.kind == "record" else user.node)(**children)
    built.nodes.append(node)
    return node


def values() -> st.SearchStrategy[np.ndarray]:
    """A small float32 or int32 array of small integers (exact comparisons), as NumPy."""
    return arrays().map(np.asarray)


@st.composite
def variable_recipes(draw: st.DrawFn, types: tuple[str, ...] = VARIABLE_TYPES) -> VariableRecipe:
    """A Variable of a drawn type and value, maybe with a ``tag`` metadata entry."""
    type_name = draw(st.sampled_from(types), label="variable type")
    tag = draw(st.sampled_from([None, "alpha", "beta"]), label="tag")
    return VariableRecipe(type_name, draw(values(), label="value"), (("tag", tag),) if tag else ())


static_values = st.one_of(st.integers(-3, 3), st.sampled_from(["relu", "gelu"]), st.booleans())


@st.composite
def _nodes(draw: st.DrawFn, depth: int, kind: str, variables_in_lists: bool) -> NodeRecipe:
    names = ATTRIBUTE_NAMES if kind != "list" else tuple(str(i) for i in range(3))
    chosen = draw(st.lists(st.sampled_from(names), min_size=1 if kind != "module" else 0, max_size=3, unique=True))
    kinds = ["variable", "variable", "static"] + (["module", "record", "list", "dict"] if depth < MAX_DEPTH else [])
    if kind in ("list", "dict"):
        kinds.remove("static")
    if kind == "list" and not variables_in_lists:
        kinds = ["module", "record"]
    children = []
    for name in sorted(chosen):
        child = draw(st.sampled_from(kinds), label=f"kind of {name}")
        if child == "variable":
            children.append((name, draw(variable_recipes())))
        elif child == "static":
            children.append((name, draw(static_values, label="static value")))
        else:
            children.append((name, draw(_nodes(depth + 1, child, variables_in_lists))))
    return NodeRecipe(kind, tuple(children))


@dataclass
class _Inventory:
    """The kinds of a recipe's nodes and its number of Variables, numbered as :func:`build` does."""

    node_kinds: list[str] = field(default_factory=list)
    variables: int = 0

    def add(self, part: Any) -> _Inventory:
        if isinstance(part, VariableRecipe):
            self.variables += 1
        elif isinstance(part, NodeRecipe):
            for _, child in part.children:
                self.add(child)
            if part.kind != "dict":
                self.node_kinds.append(part.kind)
        return self


@st.composite
def graph_recipes(
    draw: st.DrawFn, *, shared: bool = False, cycles: bool = False, variables_in_lists: bool = True
) -> GraphRecipe:
    """A Module graph recipe; with ``shared``, Variables or nodes referenced twice; with
    ``cycles``, maybe a node pointing back to the root. Without both, a tree. Without
    ``variables_in_lists``, an ``nnx.List`` holds only nodes (flax pops Variables only
    from attribute-like nodes)."""
    root = draw(_nodes(0, "module", variables_in_lists), label="root")
    inventory = _Inventory().add(root)
    nodes, variables = len(inventory.node_kinds), inventory.variables
    attributable = [i for i, kind in enumerate(inventory.node_kinds[:-1]) if kind != "list"]
    aliases = []
    if shared and variables:
        for index in range(draw(st.integers(1, 2), label="shared Variables")):
            target = draw(st.integers(0, variables - 1), label="shared Variable")
            aliases.append(Alias(nodes - 1, f"shared_{index}", target, False))
    if shared and nodes > 1 and draw(st.booleans(), label="share a node"):
        aliases.append(Alias(nodes - 1, "shared_node", draw(st.integers(0, nodes - 2)), True))
    if cycles and attributable:
        holder = draw(st.sampled_from(attributable), label="holder of the back-edge")
        aliases.append(Alias(holder, "parent", nodes - 1, True))
    return GraphRecipe(root, tuple(aliases))


@dataclass(frozen=True)
class Mode:
    """How a call picks graph or tree mode and graph updates: by its own ``graph=`` and
    ``graph_updates=`` arguments (``per_call``), or by the global switches around it."""

    graph: bool
    updates: bool
    per_call: bool

    def kwargs(self) -> dict[str, bool]:
        """The keyword arguments a transform call takes in this mode."""
        return {"graph": self.graph, "graph_updates": self.updates} if self.per_call else {}

    def context(self, nnx: Any) -> contextlib.AbstractContextManager[Any]:
        """The global switches of ``nnx`` this mode sets around a call (none when per call)."""
        stack = contextlib.ExitStack()
        if not self.per_call:
            stack.enter_context(nnx.set_graph_mode(self.graph))
            stack.enter_context(nnx.set_graph_updates(self.updates))
        return stack


modes = st.builds(Mode, graph=st.booleans(), updates=st.booleans(), per_call=st.booleans())
"""Graph or tree mode, with or without graph updates, set per call or globally."""


@dataclass(frozen=True)
class FilterRecipe:
    """A filter to build on either implementation: ``kind`` is a Variable type's name, a
    tag, ``...``, ``True``, ``False``, a filter class of nnx (``OfType``, ``WithTag``,
    ``PathContains``, ``Everything``, ``Nothing``, ``Any``, ``All``, ``Not``), with its
    ``argument`` (a type's name, a tag, an attribute name) or its ``children``."""

    kind: Any
    argument: str | None = None
    children: tuple[FilterRecipe, ...] = ()


def build_filter(nnx: Any, recipe: FilterRecipe) -> Any:
    """The filter ``recipe`` describes, made with ``nnx``."""
    kind = recipe.kind
    if kind in VARIABLE_TYPES:
        return variable_type(nnx, kind)
    if kind in ("OfType", "WithTag", "PathContains"):
        argument = variable_type(nnx, recipe.argument) if kind == "OfType" else recipe.argument
        return getattr(nnx, kind)(argument)
    if kind in ("Everything", "Nothing"):
        return getattr(nnx, kind)()
    if kind in ("Any", "All", "Not"):
        return getattr(nnx, kind)(*(build_filter(nnx, child) for child in recipe.children))
    return kind  # a tag, ..., True or False


_filter_atoms = st.one_of(
    st.sampled_from([*VARIABLE_TYPES, "alpha", "beta", ..., True, False, "Everything", "Nothing"]).map(FilterRecipe),
    st.builds(FilterRecipe, st.just("OfType"), st.sampled_from(VARIABLE_TYPES)),
    st.builds(FilterRecipe, st.just("WithTag"), st.sampled_from(["alpha", "beta"])),
    st.builds(FilterRecipe, st.just("PathContains"), st.sampled_from(ATTRIBUTE_NAMES)),
)

filter_recipes: st.SearchStrategy[FilterRecipe] = st.recursive(
    _filter_atoms,
    lambda children: st.one_of(
        st.builds(FilterRecipe, st.just("Not"), st.none(), st.tuples(children)),
        st.builds(
            FilterRecipe,
            st.sampled_from(["Any", "All"]),
            st.none(),
            st.lists(children, min_size=1, max_size=3).map(tuple),
        ),
    ),
    max_leaves=4,
)
"""A filter: an atom (type, tag, ..., bool, OfType, WithTag, PathContains, Everything,
Nothing) or an Any / All / Not of filters."""
