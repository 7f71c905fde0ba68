"""The reach tool (tools/reach.py): what it counts, what the exclusions drop, what it writes, and its ratchet."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("coverage", reason="tools/reach.py reads coverage.py's data: nox installs the reach group")

import coverage

from tools import reach

SOURCE = textwrap.dedent("""\
    def sign(x):
        if x > 0:
            return 1
        return -1


    class Box:
        def unused(self):
            return 0
    """)


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("reach_signs", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def measured(tmp_path: Path) -> Path:
    """Coverage data of a fake flax/nnx whose ``sign`` ran with a positive argument alone."""
    package = tmp_path / "site" / "flax" / "nnx"
    (package / "bridge").mkdir(parents=True)
    (package / "signs.py").write_text(SOURCE)
    (package / "bridge" / "linen.py").write_text("def wrap():\n    return 1\n")
    data = tmp_path / ".coverage"
    cov = coverage.Coverage(data_file=str(data), branch=True, source=[str(package)], config_file=False)
    cov.start()
    try:
        _load(package / "signs.py").sign(3)
    finally:
        cov.stop()
        cov.save()
    return data


def _exclusions(tmp_path: Path, text: str) -> list[reach.Exclusion]:
    path = tmp_path / "exclusions.txt"
    path.write_text(text)
    return reach.read_exclusions(path)


def test_reach_counts_the_lines_and_branches_that_ran_and_leaves_the_bridge_out(measured: Path, tmp_path: Path) -> None:
    modules = reach.measure([measured], _exclusions(tmp_path, "bridge/  # out of scope\n"))
    assert [m.module for m in modules] == ["signs.py"], (
        f"measured {[m.module for m in modules]}, expected signs.py alone"
    )
    signs = modules[0]
    assert signs.unreached_lines == [4, 9], f"unreached lines {signs.unreached_lines}, expected 4 and 9"
    assert (signs.branches, signs.branches_reached) == (2, 1), (
        f"branches {signs.branches_reached}/{signs.branches}, expected 1/2"
    )
    assert signs.unreached_branches == [(2, 4)], f"unreached branches {signs.unreached_branches}, expected 2->4"


def test_an_excluded_symbol_drops_its_lines_and_the_branches_that_start_in_it(measured: Path, tmp_path: Path) -> None:
    exclusions = _exclusions(
        tmp_path, "bridge/  # out of scope\nsigns.py::sign  # a test of the tool\nsigns.py::Box.unused  # too\n"
    )
    signs = reach.measure([measured], exclusions)[0]
    assert (signs.unreached_lines, signs.branches) == ([], 0), (
        f"with sign and Box.unused excluded: unreached {signs.unreached_lines} and {signs.branches} branches, "
        f"expected none"
    )


def test_excluded_lines_drop_themselves_and_the_branches_into_them(measured: Path, tmp_path: Path) -> None:
    exclusions = _exclusions(tmp_path, "bridge/  # out of scope\nsigns.py:4  # a branch no call takes\n")
    signs = reach.measure([measured], exclusions)[0]
    assert signs.unreached_lines == [9], f"with line 4 excluded: unreached {signs.unreached_lines}, expected 9 alone"
    assert (signs.branches, signs.branches_reached) == (1, 1), (
        f"with line 4 excluded: branches {signs.branches_reached}/{signs.branches}, expected 2->3 alone, reached"
    )


def test_an_exclusion_without_a_reason_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="gives no reason"):
        _exclusions(tmp_path, "graphlib.py::split\n")


def test_the_report_lists_each_unreached_line_and_branch_with_its_source_and_the_ratchet_holds_the_floor(
    measured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exclusions = tmp_path / "exclusions.txt"
    exclusions.write_text("bridge/  # out of scope\n")
    report = tmp_path / "conformance.json"
    report.write_text(json.dumps({"impl": "flax.nnx"}))
    floor = tmp_path / "floor.json"
    floor.write_text(json.dumps({"lines_percent": 70.0}))
    args = [str(measured), "--exclusions", str(exclusions), "--out", str(tmp_path / "out"), "--report", str(report)]
    assert reach.main([*args, "--floor", str(floor)]) == 0, "5 of 7 lines reached hold a floor of 70%"
    listed = (tmp_path / "out" / "unreached.txt").read_text().splitlines()
    assert listed == ["signs.py:4: return -1", "signs.py:9: return 0", "signs.py:2->4: if x > 0:"], f"listed {listed}"
    assert json.loads(report.read_text())["reach"]["lines_reached"] == 5, "the JSON report carries the totals"
    floor.write_text(json.dumps({"lines_percent": 80.0, "branches_percent": 50.0}))
    assert reach.main([*args, "--floor", str(floor)]) == 1, "5 of 7 lines reached drop below a floor of 80%"
    assert "lines_percent 71.43% < 80.0%" in capsys.readouterr().err
