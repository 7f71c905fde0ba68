"""The plain-text table ``tabulate`` draws when ``rich`` is not installed: rich's box
characters, cells left-aligned but the footer's ``Total``, style tags dropped: what rich
draws without styles. The conformance suite cannot see this drawing: it runs where rich
is installed, as flax needs."""

from __future__ import annotations

import pytest

from nnx_reference.summary_table import Table, _plain, _rich

EXPECTED = """\
     Demo Summary
┏━━━━━━━┳━━━━━━━━━━━━┓
┃ path  ┃ Param      ┃
┡━━━━━━━╇━━━━━━━━━━━━┩
│ layer │ float32[3] │
├───────┼────────────┤
│       │      Total │
└───────┴────────────┘

       caption
"""


def test_the_plain_table_aligns_the_total_right_and_every_other_cell_left() -> None:
    table = Table("Demo Summary", ["path", "Param"], [["layer", "[dim]float32[/dim][3]"]], ["", "[bold]Total[/bold]"],
                  "caption", total_column=1)
    drawn = _plain(table)
    assert drawn == EXPECTED, f"expected the plain table\n{EXPECTED}\ngot\n{drawn}"


TABLES = {
    "cells of one line": Table("Demo", ["path", "Param"], [["layer", "[dim]float32[/dim][3]"]], ["", "Total"],
                               "caption", total_column=1),
    "cells of several lines, unequal in a row": Table(
        "Demo Summary", ["path", "Param", "BatchStat"],
        [["layer", "[dim]float32[/dim][3]\nsecond line", "x"], ["b", "y", "p\nq\nr"]],
        ["", "Total", "[bold]3[/bold] [dim](1 B)[/dim]"], "the caption", total_column=1),
    "the total in a later column": Table("Odd title", ["path", "type", "Param", "Cache"],
                                         [["a\nb", "Linear", "6", ""], ["", "", "", "c\nd"]],
                                         ["", "", "Total", "[bold]6[/bold]"], "caption", total_column=2),
}


def _lines(drawn: str) -> list[str]:
    return [line.rstrip() for line in drawn.strip("\n").split("\n")]


@pytest.mark.parametrize("table", TABLES.values(), ids=TABLES.keys())
def test_the_plain_table_is_what_rich_draws_without_styles(table: Table) -> None:
    plain = _lines(_plain(table))
    drawn = _lines(_rich(table, {}, {}, {"force_terminal": False, "no_color": True, "width": 200}))
    assert plain == drawn, "the plain table differs from rich's:\n" + "\n".join(plain) + "\n" + "\n".join(drawn)
