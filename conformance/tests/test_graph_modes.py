"""--graph-mode: the global mode set before every page, recorded in the report, and flax's
tree-mode failures kept from counting against another implementation in tree mode."""

from __future__ import annotations

import json
import textwrap

import pytest
from specbuilder import FAKE_IMPL, GuidePage, write_fake_impl, write_spec

SWITCHES = """
    class _Switch:
        value = True

        def __init__(self, value):
            type(self).value = value

        @classmethod
        def current_value(cls):
            return cls.value

    class set_graph_mode(_Switch):
        value = True

    class set_graph_updates(_Switch):
        value = True
"""

SHOW = "print(nnx.set_graph_mode.current_value(), nnx.set_graph_updates.current_value())"

FLAX_TREE = "guide:g/cell:3  # flax 0.12.12 in tree mode prints something else; a graph-mode example\n"


@pytest.fixture
def switched_impl(pytester: pytest.Pytester) -> str:
    """A fake implementation with the two global switches."""
    files = dict(FAKE_IMPL)
    files["fakennx/__init__.py"] = textwrap.dedent(FAKE_IMPL["fakennx/__init__.py"]) + textwrap.dedent(SWITCHES)
    write_fake_impl(pytester.path, files)
    return "fakennx"


def _spec(pytester: pytest.Pytester, shown: str) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:g",
            [
                (SHOW, shown),
                ("nnx.set_graph_mode(True)\n" + SHOW, f"True {shown.split()[1]}"),
                ("x = 1", None),
            ],
        ),
        GuidePage("guide:h", [(SHOW, shown)]),
    )


@pytest.mark.parametrize(
    ("args", "shown"),
    [((), "True True"), (("--graph-mode", "graph"), "True True"), (("--graph-mode", "tree"), "False False")],
)
def test_every_page_starts_in_the_run_s_mode_and_the_report_records_it(
    pytester: pytest.Pytester, run_docs, switched_impl: str, args: tuple[str, ...], shown: str
) -> None:
    _spec(pytester, shown)
    (pytester.path / "conformance" / "expectations").mkdir(parents=True)
    (pytester.path / "conformance" / "expectations" / "flax-tree.txt").write_text("")
    result = run_docs(*args, "--conformance-report", "report.json")
    result.assert_outcomes(passed=4)
    mode = args[1] if args else "graph"
    assert json.loads((pytester.path / "report.json").read_text())["graph_mode"] == mode
    assert f"Graph mode: {mode}." in (pytester.path / "report.md").read_text()


def test_in_tree_mode_what_flax_fails_there_is_a_spec_defect_of_that_mode(
    pytester: pytest.Pytester, run_docs, switched_impl: str
) -> None:
    _spec(pytester, "False False")
    (pytester.path / "conformance" / "expectations").mkdir(parents=True)
    (pytester.path / "conformance" / "expectations" / "flax-tree.txt").write_text(FLAX_TREE)
    result = run_docs("--graph-mode", "tree", "--conformance-report", "report.json")
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] *: spec defect: flax 0.12.12 fails it in tree mode (flax 0.12.12 in tree mode prints *"]
    )
    summary = json.loads((pytester.path / "report.json").read_text())["summary"]
    assert summary["spec_defects"] == 1, f"the baseline's example is counted as a spec defect: {summary}"


def test_graph_mode_ignores_the_tree_mode_baseline(pytester: pytest.Pytester, run_docs, switched_impl: str) -> None:
    _spec(pytester, "True True")
    (pytester.path / "conformance" / "expectations").mkdir(parents=True)
    (pytester.path / "conformance" / "expectations" / "flax-tree.txt").write_text(FLAX_TREE)
    run_docs().assert_outcomes(passed=4)


def test_tree_mode_on_an_implementation_without_the_switches_is_a_run_level_error(
    pytester: pytest.Pytester, run_docs
) -> None:
    _spec(pytester, "False False")
    (pytester.path / "conformance" / "expectations").mkdir(parents=True)
    (pytester.path / "conformance" / "expectations" / "flax-tree.txt").write_text("")
    result = run_docs("--graph-mode", "tree")
    assert result.ret == 10, "an implementation that cannot be put in tree mode is not tested"
    result.stdout.fnmatch_lines(
        ["*--graph-mode tree needs nnx.set_graph_mode and nnx.set_graph_updates, which fakennx lacks*"]
    )
