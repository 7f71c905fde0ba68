"""The global graph mode a suite run puts the implementation in (``--graph-mode``).

flax.nnx 0.12.12 starts in graph mode with graph updates; its newest guides start
with ``set_graph_mode(False)`` and ``set_graph_updates(False)``, and FLIP 5310 plans
to make that tree mode the default. The suite runs either way: before every doc page
and every other test the implementation (and flax beside it, for differential tests)
is put in the run's mode, so that a page or test that changed the switches leaves
nothing to the next.
"""

from __future__ import annotations

import enum
from types import ModuleType

import pytest

SETTERS = ("set_graph_mode", "set_graph_updates")
"""The nnx switches a mode sets."""


class GraphMode(enum.Enum):
    """A global default: ``graph`` (the release's: graph mode, graph updates) or
    ``tree`` (tree mode, no graph updates)."""

    GRAPH = "graph"
    TREE = "tree"

    @property
    def graph(self) -> bool:
        """The value both switches take in this mode."""
        return self is GraphMode.GRAPH

    def missing_setters(self, nnx: ModuleType) -> list[str]:
        """The switches ``nnx`` lacks; only tree mode needs them (graph mode is every release's start)."""
        if self.graph:
            return []
        return [name for name in SETTERS if not callable(getattr(nnx, name, None))]

    def apply(self, nnx: ModuleType) -> None:
        """Put ``nnx`` in this mode, with plain calls of its documented switches."""
        for name in SETTERS:
            setter = getattr(nnx, name, None)
            if callable(setter):
                setter(self.graph)


DEFAULT = GraphMode.GRAPH
CHOICES = tuple(mode.value for mode in GraphMode)

MARKER = "graph_mode"
"""The marker that pins a test's global mode (``@pytest.mark.graph_mode("graph")``): the
law it checks is that mode's (shared references, cycles, graph updates), so it runs in
that mode whatever ``--graph-mode`` says, and checks the same thing in every run."""


def pinned(item: pytest.Item) -> GraphMode | None:
    """The global mode a test's ``graph_mode`` marker pins, if it has one."""
    marker = item.get_closest_marker(MARKER)
    return None if marker is None else GraphMode(*marker.args)
