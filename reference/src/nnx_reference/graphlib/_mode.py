"""Graph-mode configuration: the defaults of the ``graph=`` and ``graph_updates=`` arguments.

Both start from the environment (``NNX_GRAPH_MODE``, ``NNX_GRAPH_UPDATES``; true
unless set to 0 / false / no / off) and are set with :class:`set_graph_mode` and
:class:`set_graph_updates`, callable once or as context managers or decorators.
"""

from __future__ import annotations

import typing as tp

from .._config import BoolFlag, Setting, env_flag


class set_graph_mode(BoolFlag):  # lowercase: flax's name
    """Sets whether NNX APIs use graph mode by default (see :class:`_config.ConfigContext`
    for the call / context-manager / decorator forms)."""

    _setting = Setting(env_flag("NNX_GRAPH_MODE"))


class set_graph_updates(BoolFlag):  # lowercase: flax's name
    """Sets whether transforms propagate graph structure updates by default (see
    :class:`_config.ConfigContext` for the call / context-manager / decorator forms)."""

    _setting = Setting(env_flag("NNX_GRAPH_UPDATES"))


def graph_mode() -> bool:
    """The current default of ``graph=``."""
    return set_graph_mode._setting.value  # type: ignore[no-any-return]


def graph_updates() -> bool:
    """The current default of ``graph_updates=``."""
    return set_graph_updates._setting.value  # type: ignore[no-any-return]


def resolve_graph(graph: bool | None) -> bool:
    """``graph`` if given, else the current graph-mode default."""
    return graph_mode() if graph is None else graph


class Mode(tp.NamedTuple):
    """The effective ``graph`` and ``graph_updates`` of a call."""

    graph: bool
    graph_updates: bool


def resolve_mode(graph: bool | None, graph_updates: bool | None) -> Mode:
    """The effective mode of a call, each setting explicit or the current default;
    ``graph_updates`` is false outside graph mode."""
    graph = resolve_graph(graph)
    if graph_updates is None:
        graph_updates = set_graph_updates._setting.value
    return Mode(graph, graph and graph_updates)
