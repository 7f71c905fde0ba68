"""Filters and Rngs seeds drawn for the implementation under test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from .nodes import ATTRIBUTE_NAMES, STREAM_NAMES, TAGS, variable_types


@dataclass(frozen=True)
class PathEndsWith:
    """A callable filter: matches Variables whose path ends with ``name``."""

    name: str

    def __call__(self, path: tuple[Any, ...], value: Any) -> bool:
        return bool(path) and path[-1] == self.name


ATOM_FORMS: dict[str, Callable[[Any], st.SearchStrategy[Any]]] = {
    "a Variable type": variable_types,
    "a str tag": lambda nnx: st.sampled_from(TAGS),
    "a callable": lambda nnx: st.sampled_from(ATTRIBUTE_NAMES).map(PathEndsWith),
    "... True or False": lambda nnx: st.sampled_from([..., True, False]),
    "OfType": lambda nnx: variable_types(nnx).map(nnx.OfType),
    "WithTag": lambda nnx: st.sampled_from(TAGS).map(nnx.WithTag),
    "PathContains": lambda nnx: st.sampled_from(ATTRIBUTE_NAMES).map(nnx.PathContains),
    "Everything or Nothing": lambda nnx: st.sampled_from([nnx.Everything(), nnx.Nothing()]),
}
"""Each form a single filter takes, by name: the strategy drawing it for an implementation."""


def filter_atoms(nnx: Any) -> st.SearchStrategy[Any]:
    """Single filters, of every form of :data:`ATOM_FORMS`."""
    return st.one_of(*(form(nnx) for form in ATOM_FORMS.values()))


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
