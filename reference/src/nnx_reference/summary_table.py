"""Drawing ``tabulate``'s table with ``rich``, as flax does.

Cells are rich markup (``[dim]float32[/dim][1,32]``).
"""

from __future__ import annotations

import sys
import typing as tp
from collections.abc import Mapping
from dataclasses import dataclass


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


def draw(
    table: Table,
    table_kwargs: Mapping[str, tp.Any],
    column_kwargs: Mapping[str, tp.Any],
    console_kwargs: Mapping[str, tp.Any],
) -> str:
    """The table as text, rendered by rich's console."""
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    rich_table = RichTable(
        title=table.title,
        show_header=True,
        show_lines=True,
        show_footer=True,
        caption=f"\n{table.caption}",
        caption_style="bold",
        **table_kwargs,
    )
    for index, (name, footer) in enumerate(zip(table.header, table.footer)):
        cell = Text(footer, justify="right") if index == table.total_column else footer
        rich_table.add_column(name, footer=cell, **column_kwargs)
    for row in table.rows:
        rich_table.add_row(*row)
    console = Console(**{"force_terminal": True, "force_jupyter": _in_notebook(), **console_kwargs})
    with console.capture() as captured:
        console.print(rich_table)
    return captured.get()


def _in_notebook() -> bool:
    """Whether the code runs in a Jupyter kernel (rich then renders for the notebook)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"
