"""API coverage: the public names each test exercises, the parameters it varies, and the
report's coverage section."""

from __future__ import annotations

import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from specbuilder import ApiPage, write_spec
from suiteruns import importable, run_suite

from nnx_conformance.coverage import Collected, Exercised, Recorder, documented_parameters, spec_names
from nnx_conformance.coverage_summary import markdown_lines, summarize, text_lines
from nnx_conformance.items import ItemInfo
from nnx_conformance.surface import UNSHOWN_CONSTRUCTORS

SOURCE = """
def scale(x, factor=2, *, bias=None, **options):
    return x * factor

class Base:
    def __init__(self, size, *, dtype=None):
        self.size = size

    def run(self):
        return self.size

class Child(Base):
    pass

class Hidden(Child):
    pass

class Marker:
    pass
"""


def _parameter(name: str, kind: str = "POSITIONAL_OR_KEYWORD", default: str | None = None) -> dict[str, Any]:
    return {"name": name, "kind": kind, **({} if default is None else {"default": default, "literal": True})}


NAMES = {
    "scale": {
        "kind": "function",
        "parameters": [
            _parameter("x"),
            _parameter("factor", default="2"),
            _parameter("bias", "KEYWORD_ONLY", "None"),
            _parameter("mode", "KEYWORD_ONLY", "None"),
        ],
    },
    "Base": {
        "kind": "class",
        "init": [_parameter("size"), _parameter("dtype", "KEYWORD_ONLY", "None")],
        "members": {"run": {"kind": "method"}},
    },
    "Child": {
        "kind": "class",
        "init": [_parameter("size"), _parameter("dtype", "KEYWORD_ONLY", "None")],
        "members": {"run": {"kind": "method"}},
    },
    "Marker": {"kind": "class", "init": [], "members": {}},
}


@pytest.fixture
def fake() -> types.ModuleType:
    module = types.ModuleType("fakecov")
    exec(compile(textwrap.dedent(SOURCE), "fakecov.py", "exec"), module.__dict__)
    return module


@pytest.fixture
def recorder(fake: types.ModuleType) -> Iterator[Recorder]:
    watching = Recorder(fake, NAMES)
    yield watching
    watching.close()


def _recorded(recorder: Recorder, run: Any) -> Exercised:
    record = Exercised()
    recorder.begin(record)
    run()
    recorder.begin(None)
    return record


def test_a_call_records_its_public_name_and_the_parameters_given_other_values_than_the_default(
    recorder: Recorder, fake: types.ModuleType
) -> None:
    record = _recorded(recorder, lambda: (fake.scale(1), fake.scale(1, factor=2), fake.scale(1, bias=0.5)))
    assert record.names == {"scale"}
    assert record.varied == {"scale": {"x", "bias"}}, "a default passed again (factor=2) is not a variation"
    record = _recorded(recorder, lambda: (fake.scale(1, 3), fake.scale(1, mode="fast")))
    assert record.varied == {"scale": {"x", "factor", "mode"}}, "a parameter taken by **options is varied when passed"


def test_a_class_is_credited_for_its_constructor_and_methods(recorder: Recorder, fake: types.ModuleType) -> None:
    record = _recorded(recorder, lambda: fake.Base(3, dtype="f").run())
    assert record.names == {"Base"} and record.varied == {"Base": {"size", "dtype"}}


def test_inherited_code_is_credited_to_the_nearest_public_class_of_its_instance(
    recorder: Recorder, fake: types.ModuleType
) -> None:
    record = _recorded(recorder, lambda: fake.Hidden(1).run())
    assert record.names == {"Child"}, "Hidden is not public: its nearest public class is Child"


def test_a_location_silenced_in_one_test_reports_again_in_the_next(recorder: Recorder, fake: types.ModuleType) -> None:
    _recorded(recorder, lambda: [fake.scale(1) for _ in range(50)])
    assert _recorded(recorder, lambda: fake.scale(1)).names == {"scale"}
    assert _recorded(recorder, lambda: None).names == set(), "a test that calls nothing records nothing"


def test_nothing_is_recorded_between_tests(recorder: Recorder, fake: types.ModuleType) -> None:
    recorder.begin(None)
    fake.scale(1)
    assert recorder.record is None


def test_a_name_without_code_of_its_own_is_not_watched(recorder: Recorder) -> None:
    assert {owner.name for target in recorder.targets.values() for owner in target.owners} == {"scale", "Base", "Child"}


@dataclass(frozen=True)
class Finished:
    info: ItemInfo
    outcome: str | None


def _test(test_id: str, kind: str, outcome: str = "passed", apis: tuple[str, ...] = ()) -> Finished:
    return Finished(ItemInfo(test_id, f"spec/{test_id}", kind, "area", apis, ()), outcome)


def test_only_a_passing_behavioural_test_covers_a_name() -> None:
    collected = Collected(
        NAMES,
        {"scale", "Base", "Child"},
        {
            "spec/sig": Exercised({"scale", "Base"}, {"scale": {"x"}}),
            "spec/fails": Exercised({"Child"}, {"Child": {"size"}}),
            "spec/doc": Exercised({"Base"}, {"Base": {"size"}}),
            "spec/marker": Exercised(set(), {}),
        },
    )
    tests = {
        "spec/sig": _test("sig", "signature"),
        "spec/fails": _test("fails", "differential", "failed"),
        "spec/doc": _test("doc", "doc"),
        "spec/marker": _test("marker", "property", apis=("Marker", "scale")),
    }
    section = summarize(collected, tests)
    assert section["without_behavioural_test"] == ["scale", "Child"], (
        "a signature test, a failed test and a declared name that is watched do not cover"
    )
    assert section["names"]["Marker"]["tests"] == {"property": ["marker"]}, (
        "an unwatched name counts its declared tests"
    )
    assert section["names"]["Child"]["tests"] == {"differential": ["fails"]}
    assert section["names"]["Base"]["parameters"]["size"] == {"varied_by": 1, "example": "doc"}
    assert section["never_varied"] == {
        "scale": ["x", "factor", "bias", "mode"],
        "Base": ["dtype"],
        "Child": ["size", "dtype"],
    }
    report = {"coverage": section}
    assert text_lines(report)[0] == (
        "API coverage: 2 of 4 public names have a passing behavioural test; 1 of 8 documented parameters were varied"
    )
    assert "- `scale`" in markdown_lines(report) and "- `Base`: `dtype`" in markdown_lines(report)


@pytest.fixture
def split_spec(pytester: pytest.Pytester, fake_impl: str, monkeypatch: pytest.MonkeyPatch):
    importable(monkeypatch, pytester.path)
    return write_spec(pytester.path, ApiPage("graph", [("flax.nnx.split", ">>> nnx.split(1)[0]\n'graphdef'\n")]))


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "two workers"])
def test_the_report_credits_the_names_a_doc_example_calls(
    pytester: pytest.Pytester, fake_impl: str, split_spec, workers: tuple[str, ...]
) -> None:
    run = run_suite(pytester, fake_impl, split_spec, *workers)
    coverage = run.report["coverage"]
    assert coverage["names"]["split"]["tests"] == {"doc": ["graph/flax.nnx.split:1"]}
    assert coverage["names"]["split"]["passing_behavioural"] == 1
    assert "display" in coverage["without_behavioural_test"] and "split" not in coverage["without_behavioural_test"]
    run.result.stdout.fnmatch_lines(["API coverage: 1 of * public names have a passing behavioural test; *"])


def test_no_api_coverage_leaves_the_section_out(pytester: pytest.Pytester, fake_impl: str, split_spec) -> None:
    run = run_suite(pytester, fake_impl, split_spec, "--no-api-coverage")
    assert "coverage" not in run.report


def test_a_constructor_the_documentation_never_shows_counts_no_parameters() -> None:
    names = spec_names()
    for name in UNSHOWN_CONSTRUCTORS:
        assert names[name]["kind"] == "class" and names[name].get("init"), f"expected flax's {name} to take parameters"
        assert documented_parameters(name, names[name]) == [], f"expected {name}'s constructor parameters not counted"
    assert documented_parameters("Linear", names["Linear"]), "expected Linear's constructor parameters counted"
    report = {"coverage": summarize(Collected({}, set(), {}), {})}
    assert any("`GraphDef`: made by nnx.split" in line for line in markdown_lines(report)), (
        "expected the Markdown report to name the constructors it does not count, with the reason"
    )
