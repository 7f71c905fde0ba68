"""The release matrix reads one report per release and renders a row per area."""

from __future__ import annotations

import json
from pathlib import Path

from nnx_conformance import release_matrix


def _report(folder: Path, outcomes: dict[str, tuple[str, str]]) -> None:
    folder.mkdir(parents=True)
    tests = [{"id": test_id, "area": area, "outcome": outcome} for test_id, (area, outcome) in outcomes.items()]
    (folder / release_matrix.REPORT_NAME).write_text(json.dumps({"tests": tests}), encoding="utf-8")


def test_each_area_counts_the_examples_a_release_passed_out_of_those_it_ran(tmp_path: Path) -> None:
    _report(
        tmp_path / "0.12.10",
        {"graph:1": ("graph", "passed"), "graph:2": ("graph", "failed"), "nn:1": ("nn", "skipped")},
    )
    _report(tmp_path / "0.12.8", {"graph:1": ("graph", "passed"), "graph:2": ("graph", "passed")})
    (tmp_path / "0.12.9").mkdir()
    (tmp_path / "0.12.9" / release_matrix.INSTALL_FAILURE_NAME).write_text("pip failed\nno matching jaxlib\n")

    releases = release_matrix.read_matrix(tmp_path)
    markdown = release_matrix.render_markdown(releases)

    assert [r.version for r in releases] == ["0.12.8", "0.12.9", "0.12.10"], (
        "releases are ordered by version, not by name"
    )
    assert "| graph | 2/2 | - | 1/2 |" in markdown, f"the graph row shows passed/run per release:\n{markdown}"
    assert "nn" not in releases[2].cells, "an area whose examples were all skipped has no cell"
    assert "- 0.12.9: not run (no matching jaxlib)" in markdown, "a release that did not install says why"
    assert "- 0.12.10: `graph:2`" in markdown, "every failing example is named with its release"


def test_the_matrix_is_written_as_json_and_markdown(tmp_path: Path) -> None:
    _report(tmp_path / "0.12.12", {"graph:1": ("graph", "passed")})
    json_path, md_path = release_matrix.write(release_matrix.read_matrix(tmp_path), tmp_path / "matrix")
    data = json.loads(json_path.read_text())
    assert data["releases"][0]["cells"]["graph"] == {"passed": 1, "failed": 0, "failures": []}, data
    assert md_path.read_text().startswith("# The pinned spec across flax releases")
