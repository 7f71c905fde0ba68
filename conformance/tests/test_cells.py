"""Guide cells run like a notebook kernel runs them."""

from __future__ import annotations

import doctest
from pathlib import Path

from sybil import Document

from nnx_conformance.cells import Cell, CellEvaluator, CellParser, run_cell
from nnx_conformance.docpages import OPTIONFLAGS
from nnx_conformance.outputs import DocOutputChecker


def test_the_last_expression_is_shown_after_stdout() -> None:
    assert run_cell("print('a')\n1 + 1", {}, "<cell>") == "a\n2\n"


def test_a_none_result_or_a_trailing_semicolon_shows_nothing() -> None:
    assert run_cell("x = None\nx", {}, "<cell>") == ""
    assert run_cell("1 + 1;", {}, "<cell>") == ""


def test_the_result_is_kept_as_underscore_like_a_kernel_does() -> None:
    namespace: dict = {}
    run_cell("40 + 2", namespace, "<cell>")
    assert namespace["_"] == 42


def test_shell_escapes_and_magics_do_not_run() -> None:
    assert run_cell("!pip install flax\n%matplotlib inline\n'ok'", {}, "<cell>") == "'ok'\n"


def test_the_parser_reads_cells_with_and_without_output(tmp_path: Path) -> None:
    page = tmp_path / "g.md"
    page.write_text(
        "# guide:g\n\n<!-- cell: 1 -->\n````python\nprint('```')\n````\n<!-- output -->\n````text\n```\n````\n\n"
        "<!-- cell: 2 -->\n```python\nx = 1\n```\n"
    )
    examples = list(Document.parse(str(page), CellParser(CellEvaluator(OPTIONFLAGS, DocOutputChecker("fakennx")))))
    assert [e.parsed for e in examples] == [Cell(1, "print('```')\n", "```\n"), Cell(2, "x = 1\n", None)]
    for example in examples:
        assert example.region.evaluator(example) == ""


def test_output_is_compared_with_number_ellipsis_and_whitespace_flags(tmp_path: Path) -> None:
    assert OPTIONFLAGS & doctest.ELLIPSIS and OPTIONFLAGS & doctest.NORMALIZE_WHITESPACE
    page = tmp_path / "g.md"
    page.write_text(
        "<!-- cell: 1 -->\n```python\nprint(3.14159, list(range(9)))\n```\n"
        "<!-- output -->\n```text\n3.14   [0, 1, ..., 8]\n```\n"
    )
    (example,) = Document.parse(str(page), CellParser(CellEvaluator(OPTIONFLAGS, DocOutputChecker("fakennx"))))
    assert example.region.evaluator(example) == ""


def _evaluate_one(tmp_path: Path, source: str, output: str, namespace: dict | None = None) -> str:
    page = tmp_path / "g.md"
    page.write_text(f"<!-- cell: 1 -->\n```python\n{source}\n```\n<!-- output -->\n```text\n{output}\n```\n")
    (example,) = Document.parse(str(page), CellParser(CellEvaluator(OPTIONFLAGS, DocOutputChecker("fakennx"))))
    example.namespace.update(namespace or {})
    return example.region.evaluator(example)


def test_colour_codes_and_memory_addresses_are_not_compared(tmp_path: Path) -> None:
    source = "def f(): pass\nprint('State', f)"
    output = "\x1b[38;2;79;201;177mState\x1b[0m <function f at 0x1172aa480>"
    assert _evaluate_one(tmp_path, source, output) == ""
    assert "Expected" in _evaluate_one(tmp_path, source, output.replace("State", "Other"))


def test_cells_run_in_main_like_a_kernel(tmp_path: Path) -> None:
    source = "class Foo: pass\nprint(Foo)"
    assert _evaluate_one(tmp_path, source, "<class '__main__.Foo'>", {"__name__": "__main__"}) == ""


def test_a_start_up_jax_option_already_in_effect_is_accepted(tmp_path: Path) -> None:
    import jax

    jax.numpy.zeros(1)  # JAX's backends are running from here on
    count = len(jax.devices("cpu"))
    assert run_cell(f"import jax\njax.config.update('jax_num_cpu_devices', {count})", {}, "<cell>") == ""
    try:
        run_cell(f"import jax\njax.config.update('jax_num_cpu_devices', {count + 1})", {}, "<cell>")
    except RuntimeError as error:
        assert "jax_num_cpu_devices" in str(error)
    else:
        raise AssertionError("a start-up option JAX does not have was accepted")
    assert "update" not in vars(jax.config)


def test_the_implementations_module_path_reads_as_flax_nnx(tmp_path: Path) -> None:
    source = "print(\"<class 'fakennx.graphlib.Thing'>\", 'not_fakennx.x')"
    output = "<class 'flax.nnx.graphlib.Thing'> not_fakennx.x"
    assert _evaluate_one(tmp_path, source, output) == ""


def test_a_number_one_unit_off_in_its_last_documented_digit_matches(tmp_path: Path) -> None:
    # In binary, 0.05561923 - 0.05561922 is just above 1e-8; the documented precision is decimal.
    assert _evaluate_one(tmp_path, "print(0.05561923, 2.5e-3)", "0.05561922 2.4e-3") == ""
    assert "Expected" in _evaluate_one(tmp_path, "print(0.05561924)", "0.05561922")
    assert "Expected" in _evaluate_one(tmp_path, "print(0.0557)", "0.05561922")
    assert "Expected" in _evaluate_one(tmp_path, "print(2)", "1"), "integers compare exactly"
