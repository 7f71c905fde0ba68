"""The mutation check's patching (tools/mutants.py), without running the suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools import mutants


def _fake_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "nnx_reference"
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(text))
    return package


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_every_mutant_applies_once_to_the_current_reference(mutant, tmp_path: Path) -> None:
    package = mutants.make_mutant(mutant, tmp_path)
    expected = tmp_path / mutant.module
    assert package == expected, f"expected the copy at {expected}, got {package}"
    for patch in mutant.patches:
        text = (package / patch.file).read_text()
        assert patch.new in text, f"{mutant.name}: the replacement is missing from {patch.file}"
        original = (mutants.SOURCE_PACKAGE / patch.file).read_text()
        assert text != original, f"{mutant.name}: {patch.file} is unchanged"


def test_mutant_names_are_unique_module_names() -> None:
    names = [m.name for m in mutants.MUTANTS]
    assert len(set(names)) == len(names), f"expected unique mutant names, got {names}"
    bad = [m.module for m in mutants.MUTANTS if not m.module.isidentifier()]
    assert not bad, f"expected module names that are identifiers, got {bad}"


def test_a_patch_whose_snippet_is_missing_fails_loudly(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, {"graphlib.py": "def split():\n    return 1\n"})
    patch = mutants.Patch("graphlib.py", "    return 2\n", "    return 3\n")
    message = r"mutant 'demo': the snippet occurs 0 times in graphlib\.py"
    with pytest.raises(mutants.PatchError, match=message):
        mutants.apply_patch(package, patch, "demo")


def test_a_snippet_that_occurs_twice_fails_loudly(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, {"graphlib.py": "x = 1\nx = 1\n"})
    with pytest.raises(mutants.PatchError, match="occurs 2 times"):
        mutants.apply_patch(package, mutants.Patch("graphlib.py", "x = 1\n", "x = 2\n"), "demo")
    assert (package / "graphlib.py").read_text() == "x = 1\nx = 1\n", "a failed patch must not write"


def test_a_patch_that_breaks_the_syntax_fails_loudly(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, {"graphlib.py": "def split():\n    return 1\n"})
    with pytest.raises(mutants.PatchError, match="does not compile"):
        mutants.apply_patch(package, mutants.Patch("graphlib.py", "    return 1\n", "return 1\n"), "demo")


def test_a_patch_naming_a_missing_file_fails_loudly(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, {"graphlib.py": ""})
    with pytest.raises(mutants.PatchError, match=r"no file rnglib\.py"):
        mutants.apply_patch(package, mutants.Patch("rnglib.py", "a", "b"), "demo")


def test_copy_rewrites_the_absolute_self_imports_only(tmp_path: Path) -> None:
    source = _fake_package(
        tmp_path / "src",
        {
            "__init__.py": '"""nnx_reference: docs."""\nfrom . import nn\n',
            "nn/__init__.py": (
                "from nnx_reference.nn import linear\n"
                "import nnx_reference.rnglib as rnglib\n"
                "    from nnx_reference import graphlib\n"
                "from nnx_reference_extra import thing\n"
                "NAME = 'nnx_reference'\n"
            ),
        },
    )
    (source / "__pycache__").mkdir()
    copy = mutants.copy_package(source, tmp_path / "out", "nnx_mutant_demo")
    got = (copy / "nn" / "__init__.py").read_text()
    expected = (
        "from nnx_mutant_demo.nn import linear\n"
        "import nnx_mutant_demo.rnglib as rnglib\n"
        "    from nnx_mutant_demo import graphlib\n"
        "from nnx_reference_extra import thing\n"
        "NAME = 'nnx_reference'\n"
    )
    assert got == expected, f"expected\n{expected}got\n{got}"
    assert (copy / "__init__.py").read_text() == '"""nnx_reference: docs."""\nfrom . import nn\n'
    assert not (copy / "__pycache__").exists(), "expected __pycache__ to be left out of the copy"


def test_a_mutant_imports_under_its_own_name_with_its_bug(tmp_path: Path) -> None:
    (mutant,) = [m for m in mutants.MUTANTS if m.name == "not_does_not_negate"]
    mutants.make_mutant(mutant, tmp_path)
    program = textwrap.dedent(f"""
        import sys
        import {mutant.module} as nnx
        assert nnx.graphlib.__name__ == "{mutant.module}.graphlib", nnx.graphlib.__name__
        leaked = sorted(n for n in sys.modules if n.partition(".")[0] == "nnx_reference")
        assert not leaked, f"the copy imported the original: {{leaked}}"
        param = nnx.Param(1.0)
        print(nnx.Not(nnx.Param)((), param))
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, f"the mutant failed to import:\n{done.stderr}"
    assert done.stdout.strip() == "True", f"expected the mutated Not to match a Param, got {done.stdout!r}"


PYTEST_FAILURE = """\
E       AssertionError: expected the shared Param only under 'a', got keys []
E       assert [] == ['a']
FAILED conformance/src/nnx_conformance/spec/graph/test_errors.py::test_x[1]
"""
HYPOTHESIS_FAILURE = """\
  | ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)
    | AssertionError: call 1 of stream 'default' gave [1, 2], expected [3, 4]
FAILED conformance/src/nnx_conformance/spec/rnglib/test_laws.py::test_y
"""
DOC_FAILURE = """\
guide:transforms/cell:4 (transforms.md:51) did not run as documented:
AttributeError: 'WeightStack' object has no attribute 'kernel'
FAILED conformance/src/nnx_conformance/spec/test_docs.py::test_doc[guide:transforms/cell:4@L51]
"""


@pytest.mark.parametrize(
    ("name", "returncode", "verdict"),
    [
        ("m", 0, "survived"),
        ("m", 1, "caught"),
        ("m", 4, "error"),
        (mutants.BASELINE, 0, "passed"),
        (mutants.BASELINE, 1, "failed"),
    ],
)
def test_an_outcome_reads_pytests_exit_status(name: str, returncode: int, verdict: str) -> None:
    outcome = mutants.Outcome(name, returncode, 1.0, "")
    assert outcome.verdict == verdict, f"expected {verdict!r} for {name} exiting {returncode}, got {outcome.verdict!r}"


def test_a_copy_that_does_not_import_is_an_error_not_a_catch() -> None:
    output = "FAILED x.py::test_y - Failed: cannot import the implementation 'nnx_mutant_m': ImportError\n"
    outcome = mutants.Outcome("m", 1, 1.0, output)
    assert outcome.verdict == "error", f"expected 'error' for an import failure, got {outcome.verdict!r}"


@pytest.mark.parametrize(
    ("output", "test", "reason"),
    [
        (
            PYTEST_FAILURE,
            "graph/test_errors.py::test_x[1]",
            "AssertionError: expected the shared Param only under 'a', got keys []",
        ),
        (
            HYPOTHESIS_FAILURE,
            "rnglib/test_laws.py::test_y",
            "AssertionError: call 1 of stream 'default' gave [1, 2], expected [3, 4]",
        ),
        (
            DOC_FAILURE,
            "test_docs.py::test_doc[guide:transforms/cell:4@L51]",
            "AttributeError: 'WeightStack' object has no attribute 'kernel'",
        ),
        ("1 passed in 0.1s\n", None, None),
    ],
    ids=["assertion", "hypothesis", "doc-example", "passed"],
)
def test_an_outcome_names_the_first_failing_test_and_its_reason(
    output: str, test: str | None, reason: str | None
) -> None:
    outcome = mutants.Outcome("m", 1, 1.0, output)
    assert outcome.first_failure == test, f"expected first failure {test!r}, got {outcome.first_failure!r}"
    assert outcome.reason == reason, f"expected reason {reason!r}, got {outcome.reason!r}"


def test_the_baseline_runs_the_union_of_the_subsets() -> None:
    chosen = mutants.MUTANTS[:2]
    expected = f"({chosen[0].select}) or ({chosen[1].select})"
    assert mutants.baseline_select(chosen) == expected, mutants.baseline_select(chosen)


def test_list_names_every_mutant(capsys: pytest.CaptureFixture[str]) -> None:
    assert mutants.main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [m.name for m in mutants.MUTANTS], f"expected every mutant listed, got {listed}"


def test_only_rejects_an_unknown_mutant() -> None:
    with pytest.raises(SystemExit) as exc:
        mutants.main(["--only", "no_such_mutant"])
    assert exc.value.code == 2, f"expected argparse's usage error, got exit {exc.value.code}"
