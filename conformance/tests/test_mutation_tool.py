"""The mutation tool (tools/mutation.py): its sampling and bookkeeping, and one small run end to end."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import parso
import pytest

pytest.importorskip("cosmic_ray", reason="tools/mutation.py needs cosmic-ray: nox installs the mutation group")
pytest.importorskip(
    "coverage", reason="tools/mutation.py needs pytest-cov and coverage: nox installs the mutation group"
)

REPO = Path(__file__).resolve().parents[2]

from tools import mutation, mutation_focus, mutation_lines, mutation_sites  # noqa: E402 - cosmic-ray first

PACKAGE = REPO / "reference" / "src" / "nnx_reference"
MODULE = "nnx_reference.filterlib"


def _sites(tmp_path: Path) -> list[mutation_sites.Site]:
    path = mutation_sites.module_path(PACKAGE, MODULE)
    return mutation_sites.find_sites(PACKAGE, [path], tmp_path / "sites.sqlite")


def test_a_module_name_finds_its_file_the_package_s_own_included() -> None:
    found = {name: mutation_sites.module_path(PACKAGE, name) for name in (PACKAGE.name, f"{PACKAGE.name}.nn", MODULE)}
    expected = {
        PACKAGE.name: PACKAGE / "__init__.py",
        f"{PACKAGE.name}.nn": PACKAGE / "nn" / "__init__.py",
        MODULE: PACKAGE.joinpath(*MODULE.split(".")[1:]).with_suffix(".py"),
    }
    assert found == expected, f"module names map to {found}, expected {expected}"


def test_sites_inside_annotations_are_left_out(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    source = "def f(a: int | None, b=1) -> X | Y:\n    c = a | b\n    d: A | B = c\n    return d\n"
    (package / "m.py").write_text(source)
    sites = mutation_sites.find_sites(package, [package / "m.py"], tmp_path / "db.sqlite")
    or_lines = {s.line for s in sites if s.operator.startswith("core/ReplaceBinaryOperator_BitOr")}
    assert or_lines == {2}, f"expected '|' mutants only in the value 'a | b' on line 2, got lines {or_lines}"
    tree = parso.parse(source)
    assert mutation_sites._in_annotation(tree, (3, 9)), "expected a variable annotation to count as one"
    assert not mutation_sites._in_annotation(tree, (2, 10)), "expected an assigned value not to count as one"


def test_parameter_markers_are_not_taken_for_operators(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text("def f(a, /, *args, b, **kwargs):\n    return a * b\n")
    sites = mutation_sites.find_sites(package, [package / "m.py"], tmp_path / "db.sqlite")
    lines = {s.line for s in sites if "Operator" in s.operator}
    assert lines == {2}, f"expected operator mutants only in 'a * b' on line 2, got lines {lines}"


def test_the_sample_is_fixed_by_its_seed_and_its_size(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    first, again = mutation_sites.sample(sites, 5, 0), mutation_sites.sample(sites, 5, 0)
    other = mutation_sites.sample(sites, 5, 1)
    assert first == again and len(first) == 5, f"expected the same 5 sites for seed 0, got {first} and {again}"
    assert first != other, "expected seed 1 to draw other sites than seed 0"
    assert mutation_sites.sample(sites, None, 0) == sites, "expected no --sample to keep every site"


def test_a_mutant_changes_its_site_and_its_fingerprint_ignores_line_numbers(tmp_path: Path) -> None:
    site = _sites(tmp_path)[0]
    source = site.path.read_text()
    mutant = mutation_sites.make_mutant(site, source)
    assert mutant is not None and mutant.mutated != source, f"expected {site} to change the source"
    assert f"@@ -{site.line - 1}," in mutant.diff or f"@@ -{site.line}," in mutant.diff, mutant.diff
    moved = mutation_sites.make_mutant(site, "\n\n" + source)
    assert moved is not None and moved.fingerprint == mutant.fingerprint, (
        "expected the fingerprint to survive lines added above the mutated one"
    )


def test_the_same_change_in_two_places_gets_two_fingerprints(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    module = package / "m.py"
    module.write_text("def f(a, b):\n    return a * b\n\n\ndef g(a, b):\n    return a * b\n")
    sites = [
        s
        for s in mutation_sites.find_sites(package, [module], tmp_path / "db.sqlite")
        if s.operator.endswith("ReplaceBinaryOperator_Mul_Add")
    ]
    mutants = [mutation_sites.make_mutant(site, module.read_text()) for site in sites]
    prints = {mutant.fingerprint for mutant in mutants if mutant is not None}
    assert len(sites) == 2 and len(prints) == 2, f"expected two fingerprints for '* -> +' in f and g, got {prints}"


def test_a_rejudging_run_finds_the_former_survivors_after_edits_above_them(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    module = package / "m.py"
    module.write_text("def f(a, b):\n    return a * b\n")
    sites = mutation_sites.find_sites(package, [module], tmp_path / "before.sqlite")
    mutants = [mutation_sites.make_mutant(site, module.read_text()) for site in sites[:2]]
    assert all(mutants) and len(mutants) == 2, f"expected two mutants of 'a * b', got {mutants}"
    verdicts = [
        {"module": m.site.module, "operator": m.site.operator, "fingerprint": m.fingerprint, "outcome": outcome}
        for m, outcome in zip(mutants, ("survived", "killed"))
    ]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"mutants": verdicts}))
    module.write_text("import math\n\n" + module.read_text())
    moved = mutation_sites.find_sites(package, [module], tmp_path / "after.sqlite")
    found = mutation.survivors_of(results, moved)
    assert [(s.operator, s.line) for s in found] == [(mutants[0].site.operator, mutants[0].site.line + 2)], (
        f"expected only the survivor, two lines lower, got {found}"
    )


def test_an_equivalents_line_without_a_reason_is_refused(tmp_path: Path) -> None:
    listed = tmp_path / "equivalent.txt"
    listed.write_text("# comment\n\n0123456789ab  nnx_reference.filterlib:3 core/AddNot  # dead branch\n")
    assert mutation_sites.read_equivalents(listed) == {"0123456789ab": "dead branch"}
    listed.write_text("0123456789ab  nnx_reference.filterlib:3 core/AddNot\n")
    with pytest.raises(mutation_sites.EquivalentsError, match=r"equivalent\.txt:1: expected"):
        mutation_sites.read_equivalents(listed)


@pytest.mark.parametrize(
    ("module", "areas"),
    [
        ("nnx_reference.nn.linear", ("nn/linear",)),
        ("nnx_reference.graphlib", ("graph",)),
        ("nnx_reference.transforms._lift", ("transforms", "guide:transforms")),
        ("nnx_reference.training.metrics", ("training/metrics",)),
    ],
)
def test_a_module_is_focused_on_the_areas_that_spec_it(module: str, areas: tuple[str, ...]) -> None:
    assert mutation_focus.areas_of(module) == areas, f"expected {module} to map to {areas}"


SOURCE = """import os

def f(a,
      b=1):
    if (a and
        b):
        return [1,
                2]
    try:
        pass
    except OSError:
        return 3
"""


@pytest.mark.parametrize(
    ("line", "first", "last", "in_body"),
    [
        (1, 1, 1, False),
        (4, 3, 4, False),
        (6, 5, 6, True),
        (8, 7, 8, True),
        (11, 11, 11, True),
        (12, 12, 12, True),
    ],
)
def test_a_mutated_line_maps_to_its_statement_s_own_lines_and_whether_a_function_body_holds_it(
    line: int, first: int, last: int, in_body: bool
) -> None:
    located = mutation_lines.statement_line(SOURCE, line)
    assert located == mutation_lines.StatementLine(first, last, in_body), (
        f"expected line {line} to map to statement lines {first} to {last} (in a body: {in_body}), got {located}"
    )


def test_a_line_is_judged_by_the_tests_that_ran_it_unless_it_also_ran_outside_any_test(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    module = str(package / "mod.py")
    data = mutation_lines.coverage.CoverageData(str(tmp_path / "lines.coverage"))
    for context, lines in (("", [1]), ("spec/a.py::test_a|run", [1, 2]), ("spec/b.py::test_b|setup", [2, 3])):
        data.set_context(context)
        data.add_lines({module: lines})
    data.write()
    lines = mutation_lines.LineMap.read(tmp_path / "lines.coverage", package)
    assert lines.covering("mod.py", 1, 1) is None, "expected a line run at import to be left to the whole suite"
    assert lines.covering("mod.py", 2, 2) == {"spec/a.py::test_a", "spec/b.py::test_b"}, (
        "expected a line's tests to be the node ids of every phase that ran it"
    )
    assert lines.covering("mod.py", 3, 4) == {"spec/b.py::test_b"}, (
        "expected a statement over several lines to be judged by the tests that ran any of them"
    )
    assert lines.covering("mod.py", 4, 4) == frozenset(), "expected a line no test ran to have no tests"
    assert lines.covering("mod.py", 1, 2) is None, (
        "expected a statement one of whose lines ran outside any test to be left to the whole suite"
    )


def test_a_mutant_that_is_no_python_is_killed_without_running_a_test(tmp_path: Path) -> None:
    site = mutation_sites.Site("job", MODULE, PACKAGE / "filterlib.py", "core/Example", 0, 1)
    mutant = mutation_sites.Mutant(site, "x = {**a, **b}\n", "x = {**a, -b}\n", "", "f" * 12)
    judging = mutation.Judging(tmp_path, tmp_path / "missing", mutation_lines.LineMap(), None, 1.0)
    verdict = mutation.judge(mutant, judging, tmp_path / "copy")
    assert (verdict.outcome, verdict.stage) == ("killed", "compile"), (
        f"expected a mutant with a syntax error to be killed at compile time, got {verdict.outcome} at {verdict.stage}"
    )


def test_a_small_run_scores_its_module_and_writes_its_survivors(tmp_path: Path) -> None:
    sites = mutation_sites.sample(_sites(tmp_path), 2, 0)
    first = mutation_sites.make_mutant(sites[0], sites[0].path.read_text())
    assert first is not None
    equivalents = tmp_path / "equivalent.txt"
    equivalents.write_text(f"{first.fingerprint}  {MODULE}:{sites[0].line} {sites[0].operator}  # listed here\n")
    out = tmp_path / "out"
    done = _run_tool(tmp_path, "--sample", "2", "--seed", "0", "--equivalents", str(equivalents), "--out", str(out))
    results = json.loads((out / "results.json").read_text())
    outcomes = [m["outcome"] for m in results["mutants"]]
    assert outcomes[0] == "equivalent" and outcomes[1] in ("killed", "survived"), (
        f"expected the listed mutant equivalent and the other judged, got {outcomes}"
    )
    row = results["scores"][MODULE]
    assert row["equivalent"] == 1 and row["killed"] + row["survived"] == 1, f"unexpected score row {row}"
    assert f"\n{MODULE} " in done.stdout, f"expected a score line for {MODULE}:\n{done.stdout}"
    survivors = (out / "survivors.txt").read_text()
    survived = [m["fingerprint"] for m in results["mutants"] if m["outcome"] == "survived"]
    assert all(f in survivors for f in survived) and first.fingerprint not in survivors, (
        f"expected survivors.txt to list exactly the survivors {survived}:\n{survivors}"
    )
    assert (done.returncode == 1) == bool(survived), f"expected exit 1 only with survivors, got {done.returncode}"
    assert survivors.startswith(f"# {len(survived)} surviving"), survivors


def _run_tool(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """tools/mutation.py over MODULE, judged by the suite's filterlib tests, expected to judge."""
    command = [sys.executable, "-m", "tools.mutation", "--module", MODULE, "-k", "filterlib", *options]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode in (0, 1), f"expected a judged run, got exit {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


def test_a_resumed_run_keeps_the_former_verdicts_and_judges_the_rest_of_its_sample(tmp_path: Path) -> None:
    sites = mutation_sites.sample(_sites(tmp_path), 2, 0)
    first = mutation_sites.make_mutant(sites[0], sites[0].path.read_text())
    assert first is not None
    kept = mutation.Verdict(
        MODULE,
        first.site.line,
        first.site.operator,
        first.fingerprint,
        "killed",
        "covering",
        "a former run's verdict",
        1.0,
        first.diff,
    )
    former = tmp_path / "former.json"
    former.write_text(
        json.dumps(
            {
                "sample": 2,
                "seed": 0,
                "per_module": 0,
                "commit": "HEAD",
                "wall_s": 5.0,
                "mutants": [dataclasses.asdict(kept)],
            }
        )
    )
    none = tmp_path / "equivalent.txt"
    none.write_text("")
    out = tmp_path / "out"
    done = _run_tool(tmp_path, "--resume", str(former), "--equivalents", str(none), "--out", str(out))
    results = json.loads((out / "results.json").read_text())
    assert "1 judged by" in done.stdout and "1 to judge" in done.stdout, (
        f"expected one mutant left to judge:\n{done.stdout}"
    )
    assert results["mutants"][0] == dataclasses.asdict(kept), "expected the former verdict kept as it was"
    judged = results["mutants"][1:]
    assert [m["fingerprint"] for m in judged] != [first.fingerprint] and len(judged) == 1, (
        f"expected the other mutant of the sample judged, got {judged}"
    )
    assert judged[0]["outcome"] in ("killed", "survived"), f"expected the other mutant judged, got {judged[0]}"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert results["commit"] == head and results["sample"] == 2, f"expected the former run's sample at {head}"
    assert results["wall_s"] >= 5.0, "expected the wall time to count the former run's"


def _verdict(outcome: mutation.Outcome, own_tests: bool | None = None) -> mutation.Verdict:
    return mutation.Verdict(MODULE, 1, "core/Op", outcome, outcome, "covering", None, 0.0, "", own_tests)


def test_survivors_the_reference_s_own_tests_kill_are_counted_apart_from_the_suite_s_score() -> None:
    verdicts = [_verdict("killed"), _verdict("survived", True), _verdict("survived", False)]
    row = mutation.scores(verdicts)[MODULE]
    assert (row["killed"], row["survived"], row[mutation.OWN_KILLED]) == (1, 2, 1), f"unexpected score row {row}"
    line = mutation.score_line(MODULE, row)
    assert line.split()[-3:] == ["33%", "1", "67%"], f"expected the suite's 33% and 67% with own tests: {line}"


def test_the_reference_s_own_tests_judge_a_copy_of_the_package(tmp_path: Path) -> None:
    copy = mutation.fresh_copy(PACKAGE, tmp_path / "copy")
    assert not mutation.run_own_tests(REPO, tmp_path / "copy", 300), "expected the unmutated copy to pass its own tests"
    optimizer = copy / "training" / "optimizer.py"
    check = "if params_paths != grads_paths:"
    assert check in optimizer.read_text(), "the optimizer's structure check this test breaks has moved"
    optimizer.write_text(optimizer.read_text().replace(check, "if False:"))
    assert mutation.run_own_tests(REPO, tmp_path / "copy", 300), (
        "expected the own tests to kill an optimizer that no longer names the paths where grads differ"
    )


def test_a_sample_with_a_floor_per_module_draws_from_every_module(tmp_path: Path) -> None:
    paths = [mutation_sites.module_path(PACKAGE, name) for name in (MODULE, "nnx_reference.tracers")]
    sites = mutation_sites.find_sites(PACKAGE, paths, tmp_path / "sites.sqlite")
    modules = {site.module for site in sites}
    drawn = mutation_sites.sample(sites, 5, 0, per_module=2)
    assert len(drawn) == 5 and drawn == mutation_sites.sample(sites, 5, 0, per_module=2), (
        f"expected the same 5 sites for seed 0, got {drawn}"
    )
    counts = {module: sum(site.module == module for site in drawn) for module in modules}
    assert all(count >= 2 for count in counts.values()), f"expected at least 2 sites of each module, got {counts}"


def test_a_site_cosmic_ray_fails_to_mutate_has_no_mutant_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _sites(tmp_path)[0]

    def failing(*args: object) -> str:
        raise AttributeError("'PythonNode' object has no attribute 'value'")

    monkeypatch.setattr(mutation_sites, "mutate_code", failing)
    with pytest.raises(mutation_sites.UnmadeMutant, match=f"{site.module}:{site.line} {site.operator}: AttributeError"):
        mutation_sites.make_mutant(site, site.path.read_text())
