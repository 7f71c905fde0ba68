"""The HTML report: one self-contained page whose counts are the JSON report's, checked in chromium."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from specbuilder import ApiPage, GuidePage, write_spec

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
]


class Counts(HTMLParser):
    """The numbers a page shows: summary tiles (``data-summary``) and area cells (``data-area``/``data-outcome``)."""

    def __init__(self) -> None:
        super().__init__()
        self.summary: dict[str, int] = {}
        self.areas: dict[str, dict[str, int]] = {}
        self._area: str | None = None
        self._target: tuple[dict[str, int], str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "tr" and attributes.get("data-area"):
            self._area = attributes["data-area"]
        if attributes.get("data-summary"):
            self._target = (self.summary, str(attributes["data-summary"]))
        elif self._area is not None and attributes.get("data-outcome") and tag == "td":
            self._target = (self.areas.setdefault(self._area, {}), str(attributes["data-outcome"]))

    def handle_data(self, data: str) -> None:
        if self._target is not None and data.strip():
            counts, key = self._target
            counts[key] = int(data)
            self._target = None


@pytest.fixture
def page(pytester: pytest.Pytester, run_docs) -> tuple[Path, dict]:
    write_spec(
        pytester.path,
        ApiPage("graph", [("flax.nnx.split", ">>> nnx.split(1)[0]\n'graphdef'\n>>> 1\n2\n")]),
        GuidePage("guide:g", [("print('</script><b>x</b>')", "no"), ("import orbax", None)]),
        excluded={"guide:g/cell:2": "needs orbax"},
    )
    run_docs("--conformance-report", "out/report.json")
    return pytester.path / "out" / "report.html", json.loads((pytester.path / "out" / "report.json").read_text())


def test_the_page_fetches_nothing(page: tuple[Path, dict]) -> None:
    html = page[0].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page links to the network"
    assert "@import" not in html and "<link" not in html, "the page loads no style sheet"


@pytest.mark.skipif(
    not CHROMIUM.is_file(), reason="the page is checked in Debian's chromium (apt-get install chromium), absent here"
)
def test_the_page_loads_without_console_errors_and_shows_the_json_counts(
    page: tuple[Path, dict], tmp_path: Path
) -> None:
    path, report = page
    run = subprocess.run(
        [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    assert run.returncode == 0 and not console, f"chromium: {run.returncode}, console: {console}"
    counts = Counts()
    counts.feed(run.stdout)
    assert counts.summary == {**report["summary"], "total": sum(report["summary"].values())}
    assert counts.areas == {
        **{area: {**c, "total": sum(c.values())} for area, c in report["areas"].items()},
        "total": {**report["summary"], "total": sum(report["summary"].values())},
    }
    assert "3 of 4 tests shown" in run.stdout, "passed tests are hidden at first"
    assert "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in run.stdout, "a failure's message is shown as text"
    assert "repro/guide_g_cell_1" in run.stdout, "a failure names its reproduction"
    names = len(report["coverage"]["names"])
    assert f"1 of {names} public names have a passing behavioural test" in run.stdout, "the page shows API coverage"
