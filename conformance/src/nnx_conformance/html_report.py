"""The conformance report as one self-contained HTML page, beside the JSON.

The page (``data/report.html``: inline CSS and script, nothing fetched) holds the
report's data and draws from it a bar per area, the tests filtered by kind and
outcome, and each non-passing test expandable to its message and the text of its
reproduction script.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

TEMPLATE = "report.html"
"""The page's template under ``nnx_conformance/data``."""


def render(report: dict[str, Any], base: Path) -> str:
    """The page for ``report``; its tests' ``repro`` paths are read relative to ``base``."""
    tests = []
    for test in report["tests"]:
        script = base / test["repro"] if test.get("repro") else None
        if script is not None and script.is_file():
            test = {**test, "repro_text": script.read_text(encoding="utf-8")}
        tests.append(test)
    data = json.dumps({**report, "tests": tests}).replace("<", "\\u003c")
    template = resources.files("nnx_conformance").joinpath("data", TEMPLATE).read_text(encoding="utf-8")
    title = html.escape(f"NNX conformance: {report['impl']}")
    return template.replace("__TITLE__", title).replace("__REPORT_JSON__", data)


def write(report: dict[str, Any], path: Path) -> Path:
    """Write the page for ``report`` at ``path`` (repro paths relative to its folder); return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(report, path.parent), encoding="utf-8")
    return path
