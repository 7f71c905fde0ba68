"""The plain-text table ``tabulate`` draws when ``rich`` is not installed: rich's box
characters, cells left-aligned but the footer's ``Total``, style tags dropped. The
conformance suite cannot see this drawing: it runs where rich is installed, as flax needs."""

from __future__ import annotations

from nnx_reference.summary_table import Table, _plain

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
