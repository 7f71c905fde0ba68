"""Graphs of Pytrees and Variables: split into (GraphDef, State) and merged back.

Internals other modules may rely on:

* ``graph_mode()`` / ``graph_updates()``: the current defaults (set with
  :class:`set_graph_mode` / :class:`set_graph_updates`, both callable once or as
  context managers or decorators; start values from ``NNX_GRAPH_MODE`` /
  ``NNX_GRAPH_UPDATES``, default true). ``resolve_graph(graph)`` turns an optional
  ``graph=`` argument into a bool, ``resolve_mode(graph, graph_updates)`` both.
* Graph mode walks objects by identity: each Pytree, Variable and array Ref gets an
  integer index in first-visit order (root = 0, attributes visited in sorted key
  order), a second visit yields a ``NodeRef`` / ``VariableRef``, so shared references
  and cycles survive ``split``/``merge``. Arrays are state leaves, and so is any other
  non-None value held directly in a Pytree's data attribute (``nnx.data(3)``); other
  non-node values are static. Containers (lists, tuples, dicts, any JAX pytree) are walked
  one level at a time and rebuilt from their ``PyTreeDef``.
* Tree mode (``graph=False``) is plain ``jax.tree`` flattening with Variables as
  leaves; a Variable or Ref reached twice, or a Pytree reached again inside itself
  (a cycle), raises ``ValueError`` naming the paths.
* :class:`GraphDef` is immutable, hashable and compared by structure (types,
  static attribute values, metadata, indices), so it can key caches and be a
  static argument of ``jax.jit``. A graph-mode one holding an unhashable static value
  raises flax's ``TypeError`` from ``hash()`` except inside ``hashing_for_caches()``,
  where that value hashes by its type and repr: the caches hash graphdefs there.
* ``flatten(node, ref_index=...)`` fills ``ref_index`` (a :class:`RefMap`, object ->
  index; an object already in it is a reference); ``unflatten(graphdef, state,
  index_ref=...)`` fills ``index_ref`` (index -> object). A graph keeps its identities
  across a transform boundary through ``flatten_into`` / ``unflatten_into``, where the
  objects already in the maps keep their indices and are updated in place (the
  transforms' lifting), or, as flax does, through ``flatten(ref_outer_index=...)``,
  which records outer indices in the GraphDef, and
  ``unflatten(outer_index_outer_ref=...)``, which rebuilds those outer objects in place
  (:class:`UpdateContext` packages that).
* ``merge`` reuses the Variables found in the State (``copy=True`` copies them);
  ``split``/``state`` return the graph's own Variables, not copies.

The parts, each private: ``_mode`` (configuration), ``_nodes`` (what the graph
walks), ``_defs`` (GraphDef records), ``_flatten`` / ``_unflatten``,
``_split_merge`` (GraphDef, split, merge), ``_state_ops`` (state, update, clone,
pop, ...), ``_traversal`` (iter_graph, recursive_map, with_vars, ...) and
``_contexts`` (update contexts). The pytree view of graph nodes (``to_tree``,
``from_tree``, ``prefix``, ``NodeStates``) is :mod:`extract`, built on these.
"""

from ._contexts import (
    MergeContext,
    SplitContext,
    UpdateContext,
    current_update_context,
    merge_context,
    split_context,
    update_context,
)

# Not in __all__: the names the modules built on graphlib use (Key and PathParts are
# also documented, as nnx.graph.Key), and the type GraphDef.apply returns.
from ._defs import RefMap, hashing_for_caches, without_metadata  # noqa: F401
from ._mode import Mode, graph_mode, graph_updates, resolve_graph, resolve_mode, set_graph_mode, set_graph_updates  # noqa: F401
from ._nodes import Key, PathParts, is_graph_node, is_node, jax_key  # noqa: F401
from ._split_merge import (  # noqa: F401
    ApplyCaller,
    GraphDef,
    GraphState,
    call,
    flatten,
    flatten_into,
    merge,
    split,
    unflatten,
    unflatten_into,
)
from ._state_ops import (
    PureState,
    as_pure,
    cached_partial,
    clone,
    graphdef,
    map,
    pop,
    pure,
    state,
    unpack,
    update,
    variables,
)
from ._traversal import (  # noqa: F401 - rebuild is the Rngs helpers' walk, not in __all__
    find_duplicates,
    iter_children,
    iter_graph,
    iter_module_children,
    rebuild,
    recursive_map,
    set_metadata,
    vars_as,
    with_vars,
)

__all__ = [
    "GraphDef",
    "GraphState",
    "MergeContext",
    "PureState",
    "SplitContext",
    "UpdateContext",
    "as_pure",
    "cached_partial",
    "call",
    "clone",
    "current_update_context",
    "find_duplicates",
    "flatten",
    "graphdef",
    "iter_children",
    "iter_graph",
    "iter_module_children",
    "map",
    "merge",
    "merge_context",
    "pop",
    "pure",
    "recursive_map",
    "set_graph_mode",
    "set_graph_updates",
    "set_metadata",
    "split",
    "split_context",
    "state",
    "unflatten",
    "unpack",
    "update",
    "update_context",
    "variables",
    "vars_as",
    "with_vars",
]

for _public in (GraphDef, GraphState, MergeContext, SplitContext, UpdateContext, set_graph_mode, set_graph_updates):
    _public.__module__ = __name__  # their public home, as flax's: reprs and pickles name it
del _public
