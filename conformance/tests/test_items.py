"""How the suite describes its hand-written tests: kind from the kind marker, area from the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnx_conformance.items import KINDS, SPEC_ROOT, describe, describe_nodeid, folder_area, in_suite

AREAS = sorted(path.name for path in SPEC_ROOT.iterdir() if (path / "__init__.py").is_file())
"""The spec areas: the packages under ``spec``."""


def hand_written(pytester: pytest.Pytester) -> list[pytest.Item]:
    """Every hand-written test of the suite, collected against the reference (rooted above the
    package, so that node ids hold its path, as in a run from the repository)."""
    targets = [f"nnx_conformance.spec.{area}" for area in AREAS]
    items, _ = pytester.inline_genitems(
        "--pyargs", *targets, "--impl", "nnx_reference", "-p", "no:xdist", f"--rootdir={SPEC_ROOT.parents[1]}"
    )
    return [item for item in items if in_suite(item)]


def test_every_spec_module_is_filed_under_an_area() -> None:
    loose = sorted(p.name for p in SPEC_ROOT.glob("test_*.py") if p.name != "test_docs.py")
    assert not loose, f"hand-written test modules belong in spec/<area>/, found {loose} directly in spec/"


def test_each_hand_written_test_has_a_kind_an_area_and_a_node_id_that_says_both(pytester: pytest.Pytester) -> None:
    """Every hand-written test declares a known kind; its area is its folder or a page under it
    (``nn/linear``); and its node id alone (all a crashed test leaves) gives the same id, kind and area."""
    items = hand_written(pytester)
    assert len(items) > 100, f"expected the suite's hand-written tests, collected {len(items)}"
    unmarked = sorted({describe(item).id.partition("::")[0] for item in items if describe(item).kind not in KINDS})
    assert not unmarked, (
        f"every hand-written test has pytest.mark.kind(one of {KINDS}); these modules lack it: {unmarked}"
    )
    for item in items:
        full, alone = describe(item), describe_nodeid(item.nodeid)
        folder = Path(item.path).relative_to(SPEC_ROOT).parts[0]
        if full.kind != "signature":  # a signature test's area is the API page of its name
            assert full.area == folder or full.area.startswith(f"{folder}/"), (
                f"{item.nodeid}: expected area {folder!r} or a page under it, got {full.area!r}"
            )
        assert (alone.id, alone.kind, alone.area) == (full.id, full.kind, full.area), (
            f"{item.nodeid}: from its node id alone expected {(full.id, full.kind, full.area)}, "
            f"got {(alone.id, alone.kind, alone.area)}"
        )


@pytest.mark.parametrize(
    ("relative", "area"),
    [
        ("graph/test_laws.py", "graph"),
        ("nn/test_errors.py", "nn"),
        ("test_docs.py", "docs"),
    ],
)
def test_the_folder_under_spec_is_the_area(relative: str, area: str) -> None:
    assert folder_area(relative) == area, f"expected {relative} in area {area!r}, got {folder_area(relative)!r}"


def test_kinds_keeps_only_the_tests_of_the_named_kinds(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--pyargs",
        "nnx_conformance.spec.state",
        "--impl",
        "nnx_reference",
        "--kinds",
        "error",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "--co",
        "-q",
        f"--rootdir={SPEC_ROOT.parents[1]}",
    )
    collected = [line for line in result.outlines if line.startswith("nnx_conformance/spec/")]
    assert collected and all(line.startswith("nnx_conformance/spec/state/test_errors.py::") for line in collected), (
        f"expected only state's error tests with --kinds error, got {collected}"
    )


def test_kinds_rejects_a_kind_the_suite_does_not_have(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nnx_conformance.spec.state", "--kinds", "laws", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, f"expected a usage error for --kinds laws, got {result.ret}"
    result.stderr.fnmatch_lines(["*laws: the kinds are doc, property, differential, signature, error, other*"])
