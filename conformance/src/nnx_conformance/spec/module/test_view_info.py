"""Differential tests of ``view_info`` on a Module whose ``set_view`` has a docstring of a
drawn layout: what flax prints of each argument (annotation, default, the description with
its continuation and blank lines) and where it refuses one (an argument its docstring leaves
out, an entry not indented by two spaces, ``name (type):`` entries)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("module")]

GUIDE = "guide:view (a set_view docstring in Google style, shown by view_info)"


class Entry(NamedTuple):
    """One ``Args:`` entry: the argument it documents, written ``name (type):`` if ``typed``,
    its first line (maybe empty) and continuation lines indented by ``depth`` more spaces."""

    name: str
    typed: bool
    first: str
    continuation: int
    depth: int


class Docstring(NamedTuple):
    """A ``set_view`` docstring: a summary or not, the entries indented by ``indent`` under
    ``Args:``, then maybe a blank line and maybe a ``Returns:`` section."""

    summary: bool
    indent: int
    entries: list[Entry]
    blank_after: bool
    returns: bool

    def text(self) -> str:
        lines = ["Sets the view.", ""] if self.summary else []
        lines.append("Args:")
        pad = " " * self.indent
        for entry in self.entries:
            name = f"{entry.name} (int)" if entry.typed else entry.name
            lines.append(f"{pad}{name}:{' ' + entry.first if entry.first else ''}")
            lines.extend(f"{pad}{' ' * entry.depth}more {i}" for i in range(entry.continuation))
        if self.blank_after:
            lines.append("")
        if self.returns:
            lines += ["Returns:", "  nothing."]
        return "\n".join(lines)


entries = st.builds(
    Entry,
    name=st.sampled_from(["flag", "size", "mode", "extra"]),
    typed=st.booleans(),
    first=st.sampled_from(["", "what it sets.", "one: with a colon."]),
    continuation=st.integers(0, 2),
    depth=st.sampled_from([2, 4]),
)
docstrings = st.builds(
    Docstring,
    summary=st.booleans(),
    indent=st.sampled_from([2, 2, 2, 4]),
    entries=st.lists(entries, max_size=4, unique_by=lambda e: e.name),
    blank_after=st.booleans(),
    returns=st.booleans(),
)


@pytest.mark.apis("view_info")
@pytest.mark.documented(GUIDE)
@given(docstring=st.none() | docstrings)
def test_view_info_prints_a_set_view_docstring_as_flax(nnx: Any, flax_nnx: Any, docstring: Docstring | None) -> None:
    def scenario(nnx: Any) -> Any:
        class Viewed(nnx.Module):
            def set_view(
                self,
                flag: bool | None = None,
                size: int | None = None,
                mode: str = "x",
                *,
                extra=0,
            ) -> None:
                pass

        Viewed.set_view.__doc__ = None if docstring is None else docstring.text()
        return nnx.view_info(Viewed())

    assert_same(flax_nnx, nnx, scenario)
