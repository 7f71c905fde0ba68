"""Examples that depend on a failed example are skipped as blocked by it."""

from __future__ import annotations

import pytest
from specbuilder import ApiPage, GuidePage, write_spec

from nnx_conformance.blocking import Blockers, defined_names, free_names


def test_defined_names_are_the_top_level_bindings() -> None:
    source = (
        "import jax.numpy as jnp\nimport os.path\nfrom a import b as c\nx, (y, z) = 1, (2, 3)\n"
        "def f(): w = 1\nclass K: v = 2\nfor i in []: pass\nwith open('f') as fh: q = 1\n"
        "if True:\n    r = 1\nelse:\n    s = 2\nt: int = 1\n"
    )
    assert defined_names(source) == {"jnp", "os", "c", "x", "y", "z", "f", "K", "i", "fh", "q", "r", "s", "t"}


def test_free_names_include_names_read_inside_functions() -> None:
    assert free_names("def f():\n    return model(x)\n") == {"model", "x"}


def test_a_name_read_before_the_example_rebinds_it_is_free() -> None:
    assert free_names("d = restore(d)\ne = d\n") == {"restore", "d"}


def test_names_bound_earlier_in_the_same_block_are_not_free() -> None:
    source = (
        "with ctx():\n    g, s = split(m)\n    def f(g, s):\n        return g\n    out = f(g, s)\n"
        "ys = [y * k for y in xs]\n"
    )
    assert free_names(source) == {"ctx", "split", "m", "k", "xs"}


def test_names_an_example_binds_in_except_clauses_nested_definitions_and_walrus_tests_are_not_free() -> None:
    source = (
        "def train_step(x):\n"
        "    def loss_fn(p):\n"
        "        return p\n"
        "    return loss_fn(x)\n"
        "try:\n"
        "    train_step(1)\n"
        "except Exception as e:\n"
        "    print(e)\n"
        "if (found := train_step(2)):\n"
        "    print(found)\n"
    )
    assert free_names(source) == {"Exception", "print"}


def test_a_walrus_at_top_level_defines_its_target() -> None:
    assert defined_names("print((y := 3))\n") == {"y"}
    assert free_names("print((y := 3))\nprint(y)\n") == {"print"}
    assert defined_names("ys = [(w := x) for x in xs]\nf = lambda a: (q := a)\n") == {"ys", "w", "f"}


def test_match_statements_define_their_captures() -> None:
    source = (
        "match point:\n"
        "    case (x, y) if x > limit:\n"
        "        z = x + y\n"
        "    case {'k': v, **rest}:\n"
        "        print(v, rest)\n"
        "    case Point(a=b) as p:\n"
        "        print(b, p)\n"
        "    case [first, *others]:\n"
        "        print(first, others, unknown)\n"
    )
    assert defined_names(source) == {"x", "y", "z", "v", "rest", "b", "p", "first", "others"}
    assert free_names(source) == {"point", "limit", "print", "Point", "unknown"}
    blockers = Blockers()
    blockers.block(source, "page/obj:1")
    assert blockers.culprit("print(others)") == "page/obj:1"


def test_an_except_as_name_is_unbound_after_its_handler() -> None:
    source = "try:\n    pass\nexcept ValueError as e:\n    message = str(e)\n"
    assert defined_names(source) == {"message"}
    assert free_names(source + "print(e)\n") == {"ValueError", "str", "print", "e"}


def test_an_example_that_rebinds_a_blocked_name_from_itself_is_blocked() -> None:
    blockers = Blockers()
    blockers.block("with ctx() as c:\n    d = c.load()\n", "page/obj:8")
    assert blockers.culprit("d = restore(d)") == "page/obj:8"


def test_a_name_redefined_by_a_later_example_no_longer_blocks() -> None:
    blockers = Blockers()
    blockers.block("model = make()", "page/cell:1")
    assert blockers.culprit("model(1)") == "page/cell:1"
    blockers.release("model = other()")
    assert blockers.culprit("model(1)") is None


def test_dependents_of_a_failed_example_are_skipped_transitively(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:g",
            [
                ("model = 1 / 0", None),
                ("result = model + 1", None),
                ("print(result)", "2"),
                ("print('independent')", "independent"),
            ],
        ),
    )
    result = run_docs()
    result.assert_outcomes(failed=1, skipped=2, passed=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]2[]] *: blocked by guide:g/cell:1"])


def test_dependents_of_an_excluded_example_are_blocked_by_it(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        GuidePage("guide:g", [("data = download()", None), ("len(data)", "3")]),
        excluded={"guide:g/cell:1": "needs network"},
    )
    result = run_docs()
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: blocked by guide:g/cell:1"])


def test_only_names_from_the_failing_statement_on_are_blocked() -> None:
    source = "import math\nx = 1\ny = 1 / 0\nz = 2\n"
    blockers = Blockers()
    blockers.block(source, "page/obj:1", from_line=3)
    assert blockers.culprit("print(math, x)") is None
    assert blockers.culprit("print(y)") == "page/obj:1"
    assert blockers.culprit("print(z)") == "page/obj:1"


def test_a_failed_code_block_blocks_what_it_did_not_define(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        ```python
        import math
        model = math.sqrt(-1)
        ```

        >>> math.sqrt(4)
        2.0
        >>> model
        1.0
    """,
                )
            ],
        ),
    )
    result = run_docs()
    result.assert_outcomes(failed=1, passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: blocked by graph/flax.nnx.split:1"])


def test_dependents_of_an_excluded_code_block_are_blocked_by_it(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        ```python
        total = decay * total
        ```

        >>> total
        1
    """,
                )
            ],
        ),
        excluded={"graph/flax.nnx.split:1": "fragment: uses decay, total, which the page never defines"},
    )
    result = run_docs()
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: blocked by graph/flax.nnx.split:1"])
