"""The guide notebooks: their code cells, text outputs, and which cells the spec runs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .exclusions import excluded_reason

#: Guides in the spec: page stem -> notebook path in the sdist.
GUIDES: dict[str, str] = {
    "nnx_basics": "docs_nnx/nnx_basics.ipynb",
    "key_concepts": "docs_nnx/key_concepts.ipynb",
    "pytree": "docs_nnx/guides/pytree.ipynb",
    "filters_guide": "docs_nnx/guides/filters_guide.ipynb",
    "randomness": "docs_nnx/guides/randomness.ipynb",
    "transforms": "docs_nnx/guides/transforms.ipynb",
    "extracting_intermediates": "docs_nnx/guides/extracting_intermediates.ipynb",
    "demo": "docs_nnx/guides/demo.ipynb",
    "view": "docs_nnx/guides/view.ipynb",
    "performance": "docs_nnx/guides/performance.ipynb",
    "checkpointing": "docs_nnx/guides/checkpointing.ipynb",
    "surgery": "docs_nnx/guides/surgery.ipynb",
    "hijax": "docs_nnx/hijax/hijax.ipynb",
}

#: Guides listed in the manifest but not run, with the reason.
EXCLUDED_GUIDES: dict[str, str] = {}

_VIEW_MATPLOTLIB = "imports matplotlib, not a test dependency"
_VIEW_NEEDS_CELL_2 = "uses MyModel from cell 2, which is excluded (matplotlib)"

#: Cells that no general rule catches, by (guide stem, 1-based code cell index).
#: Cells that are wrong against flax itself are not excluded here: they run, and
#: conformance/spec_defects.txt lists them with the error flax gives.
CELL_EXCLUSIONS: dict[tuple[str, int], str] = {
    ("view", 2): _VIEW_MATPLOTLIB,
    ("view", 3): _VIEW_NEEDS_CELL_2,
    ("view", 4): _VIEW_NEEDS_CELL_2,
    ("view", 5): "uses in_dim and out_dim from cell 2, which is excluded (matplotlib)",
    ("view", 6): "trains MyModel (cell 2, excluded) for 100 epochs and plots with matplotlib",
    ("view", 7): "prints nnx.view_info of the model trained in cell 6, which is excluded",
}


@dataclass(frozen=True)
class Cell:
    """A code cell of a guide: its source, the text output it shows, and its classification."""

    index: int  # 1-based among code cells
    source: str
    output: str | None  # None when the notebook shows no text output
    line: int  # line of the cell's source in the .ipynb file
    reason: str | None  # why the cell is excluded; None when it runs


def notebook_cells(stem: str, text: str) -> list[Cell]:
    """The code cells of a guide notebook, classified cell by cell (a guide excluded whole,
    ``EXCLUDED_GUIDES``, is applied to its page by ``spec_pages.guide_page``)."""
    notebook = json.loads(text)
    lines = _cell_source_lines(text)
    cells = []
    code_index = 0
    for position, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        code_index += 1
        source = _joined(cell["source"])
        reason = CELL_EXCLUSIONS.get((stem, code_index)) or excluded_reason(source)
        cells.append(
            Cell(
                code_index,
                source,
                _text_output(cell.get("outputs", [])),
                lines[position] if position < len(lines) else 1,
                reason,
            )
        )
    return cells


def _joined(source: str | list[str]) -> str:
    text = source if isinstance(source, str) else "".join(source)
    return text.replace("\r\n", "\n")


def _text_output(outputs: list[dict]) -> str | None:
    """stdout stream text, then each ``text/plain`` execute result on its own line(s).

    stderr (warnings and logs of the machine that ran the notebook), display_data, HTML and
    images are not part of the expected output.
    """
    text = ""
    for output in outputs:
        if output["output_type"] == "stream" and output.get("name") == "stdout":
            text += _joined(output["text"])
        elif output["output_type"] == "execute_result" and "text/plain" in output.get("data", {}):
            if text and not text.endswith("\n"):
                text += "\n"
            text += _joined(output["data"]["text/plain"]) + "\n"
    if not text:
        return None
    return text if text.endswith("\n") else text + "\n"


def _cell_source_lines(text: str) -> list[int]:
    """For each cell of a pretty-printed notebook, the 1-based line of its ``"source"`` key."""
    key_re = re.compile(r'^(\s*)"(\w+)":')
    cell_indent: str | None = None
    groups: list[dict[str, int]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        match = key_re.match(line)
        if not match:
            continue
        indent, key = match.groups()
        if cell_indent is None and key == "cell_type":
            cell_indent = indent
        if indent != cell_indent:
            continue
        if not groups or key in groups[-1]:
            groups.append({})
        groups[-1][key] = number
    return [group.get("source", group.get("cell_type", 1)) for group in groups]
