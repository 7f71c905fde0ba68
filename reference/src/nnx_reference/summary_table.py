"""Drawing ``tabulate``'s table: with ``rich`` when it is installed, as flax does, else
in plain text with the same box characters.

Cells are rich markup (``[dim]float32[/dim][1,32]``); the plain drawing drops the
style tags the summary writes.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import typing as tp
from collections.abc import Mapping
from dataclasses import dataclass

_STYLE_TAG = re.compile(r"\[/?(?:bold dim|bold|dim)\]")
HAS_RICH = importlib.util.find_spec("rich") is not None


@dataclass(frozen=True)
class Table:
    """A summary table: its title, column headers, rows and footer (rich markup per
    cell) and the caption under it."""

    title: str
    header: list[str]
    rows: list[list[str]]
    footer: list[str]
    caption: str
    total_column: int
    """The footer cell that reads ``Total``, right-aligned."""


def draw(table: Table, table_kwargs: Mapping[str, tp.Any], column_kwargs: Mapping[str, tp.Any],
         console_kwargs: Mapping[str, tp.Any]) -> str:
    """The table as text: rendered by rich's console when rich is installed, else plain."""
    if not HAS_RICH:
        return _plain(table)
    return _rich(table, table_kwargs, column_kwargs, console_kwargs)


def _in_notebook() -> bool:
    """Whether the code runs in a Jupyter kernel (rich then renders for the notebook)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def _rich(table: Table, table_kwargs: Mapping[str, tp.Any], column_kwargs: Mapping[str, tp.Any],
          console_kwargs: Mapping[str, tp.Any]) -> str:
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    rich_table = RichTable(title=table.title, show_header=True, show_lines=True, show_footer=True,
                           caption=f"\n{table.caption}", caption_style="bold", **table_kwargs)
    for index, (name, footer) in enumerate(zip(table.header, table.footer)):
        cell = Text(footer, justify="right") if index == table.total_column else footer
        rich_table.add_column(name, footer=cell, **column_kwargs)
    for row in table.rows:
        rich_table.add_row(*row)
    console = Console(**{"force_terminal": True, "force_jupyter": _in_notebook(), **console_kwargs})
    with console.capture() as captured:
        console.print(rich_table)
    return captured.get()


def _unstyled(markup: str) -> str:
    return _STYLE_TAG.sub("", markup)


def _plain(table: Table) -> str:
    """The table drawn like rich's default box (heavy head, a rule between rows), unstyled."""
    header = table.header
    rows = [[_unstyled(cell) for cell in row] for row in table.rows]
    footer = [_unstyled(cell) for cell in table.footer]
    columns = list(zip(header, *rows, footer))
    widths = [max(len(line) for cell in column for line in cell.split("\n")) for column in columns]

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * (width + 2) for width in widths) + right

    def lines(cells: list[str], edge: str, right_aligned: int | None = None) -> list[str]:
        split = [cell.split("\n") for cell in cells]
        out = []
        for i in range(max(len(s) for s in split)):
            parts = []
            for j, (s, width) in enumerate(zip(split, widths)):
                text = s[i] if i < len(s) else ""
                parts.append(" " + (text.rjust(width) if j == right_aligned else text.ljust(width)) + " ")
            out.append(edge + edge.join(parts) + edge)
        return out

    total_width = sum(widths) + 3 * len(widths) + 1
    out = [_centered(table.title, total_width), rule("┏", "┳", "┓", "━"), *lines(header, "┃"),
           rule("┡", "╇", "┩", "━")]
    for row in rows:
        out += [*lines(row, "│"), rule("├", "┼", "┤", "─")]
    out += [*lines(footer, "│", right_aligned=table.total_column), rule("└", "┴", "┘", "─")]
    out += ["", _centered(_unstyled(table.caption), total_width)]
    return "\n".join(out) + "\n"


def _centered(text: str, width: int) -> str:
    """``text`` centred in ``width`` as rich centres it (an odd spare space goes right)."""
    return " " * ((width - len(text)) // 2) + text
