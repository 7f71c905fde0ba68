"""Doc examples: one test per example, a shared namespace per page, output comparison."""

from __future__ import annotations

import pytest
from specbuilder import ApiPage, GuidePage, write_fake_impl, write_spec


def test_each_api_example_is_one_test_with_a_readable_id(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        Splits.

        >>> x = 1 + 1
        >>> x
        2
        >>> print('a   b')
        a b
        >>> 0.1 + 0.2
        0.3
        >>> list(range(30))
        [0, 1, ..., 29]
    """,
                )
            ],
        ),
    )
    result = run_docs("-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*test_doc?graph/flax.nnx.split:1@L7? PASSED*"])


def test_the_global_setup_provides_jax_jnp_and_nnx(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        >>> nnx.split(jnp.int32(3))[0]
        'graphdef'
        >>> jax.numpy is jnp
        True
    """,
                )
            ],
        ),
    )
    run_docs().assert_outcomes(passed=2)


def test_wrong_output_fails_showing_expected_and_got(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        >>> 1 + 1
        3
    """,
                )
            ],
        ),
    )
    result = run_docs()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*graph/flax.nnx.split:1 (graph.md:*) did not run as documented:*", "Expected:", "    3", "Got:", "    2"]
    )


def test_excluded_examples_are_skipped_with_their_reason(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        >>> import orbax
        >>> 1
        1
    """,
                )
            ],
        ),
        excluded={"graph/flax.nnx.split:1": "needs orbax"},
    )
    result = run_docs()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*excluded from the spec: needs orbax*"])


def test_selecting_one_example_runs_the_earlier_ones_of_its_page_first(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        >>> y = 40
        >>> y + 2
        42
    """,
                )
            ],
        ),
    )
    run_docs("-k", "split:2").assert_outcomes(passed=1)


def test_a_guide_cell_shows_its_stdout_then_its_last_expression(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:basics",
            [
                ("print('hello')\nvalue = 0.30000004\nvalue", "hello\n0.3"),
                ("value = None\nvalue", None),
                ("[1, 2]\nNone", ""),
                ("value = 3\nvalue;", ""),
                ("from flax import nnx\nnnx.display(nnx.Thing())\nprint('shown')", "shown"),
                ("%matplotlib inline\n!pip install flax\nlist(range(20))", "[0, 1, ..., 19]"),
                ("print('not compared: no output block')", None),
            ],
        ),
    )
    result = run_docs("-v")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["*test_doc?guide:basics/cell:1@L4? PASSED*"])


def test_a_guide_cell_with_other_output_fails(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, GuidePage("guide:basics", [("print('hello')\n7", "hello\n8")]))
    result = run_docs()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["Expected:", "    hello", "    8", "Got:", "    hello", "    7"])


def test_a_guide_cell_that_raises_fails_with_its_traceback(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, GuidePage("guide:basics", [("def f():\n    raise ValueError('boom')\nf()", None)]))
    result = run_docs()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*raise ValueError('boom')*", "ValueError: boom"])


def test_pages_run_with_eight_cpu_devices(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        ApiPage(
            "graph",
            [
                (
                    "flax.nnx.split",
                    """
        >>> len(jax.devices())
        8
    """,
                )
            ],
        ),
    )
    run_docs().assert_outcomes(passed=1)


CODE_PAGE = """
    Example::

    ```python
    class Box:
        def __init__(self, size):
            self.size = size

    box = Box(3)
    assert box.size == 3
    ```

    >>> box.size
    3
"""


def test_a_code_block_runs_in_the_page_namespace_between_doctests(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, ApiPage("graph", [("flax.nnx.split", "\n    >>> start = 1\n" + CODE_PAGE)]))
    result = run_docs("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*test_doc?graph/flax.nnx.split:2@L9? PASSED*", "*test_doc?graph/flax.nnx.split:3@L18? PASSED*"]
    )


def test_a_code_block_that_raises_fails_with_its_traceback(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(pytester.path, ApiPage("graph", [("flax.nnx.split", CODE_PAGE.replace("== 3", "== 4"))]))
    result = run_docs()
    result.assert_outcomes(failed=1, passed=1)  # the failing line ran after box was defined
    result.stdout.fnmatch_lines(
        [
            "*graph/flax.nnx.split:1 (graph.md:*) did not run as documented:*",
            '*File "<*graph.md:*>", line 6, in <module>*',
            "*AssertionError*",
        ]
    )


VAR_DEFAULTS_IMPL = {
    "fakedefaults/__init__.py": '''
        """A fake implementation with global Variable defaults."""
        import types

        _current = types.SimpleNamespace(hijax=False, ref=False)

        def var_defaults(*, hijax=None, ref=None):
            if hijax is not None:
                _current.hijax = hijax
            if ref is not None:
                _current.ref = ref
            return _current
    ''',
}


def test_each_page_starts_from_the_variable_defaults_the_run_began_with(pytester: pytest.Pytester, run_docs) -> None:
    write_fake_impl(pytester.path, VAR_DEFAULTS_IMPL)
    write_spec(
        pytester.path,
        GuidePage("guide:a", [("nnx.var_defaults(hijax=True).hijax", "True")]),
        GuidePage("guide:b", [("nnx.var_defaults().hijax", "False")]),
    )
    run_docs(impl="fakedefaults").assert_outcomes(passed=2)


BROKEN_DEFAULTS_IMPL = {
    "brokendefaults/__init__.py": '''
        """A fake implementation whose var_defaults raises."""

        def var_defaults(*, hijax=None, ref=None):
            raise TypeError("VarDefaults() takes no arguments")
    ''',
}


def test_an_implementation_whose_var_defaults_raises_still_gets_its_report(pytester: pytest.Pytester, run_docs) -> None:
    write_fake_impl(pytester.path, BROKEN_DEFAULTS_IMPL)
    write_spec(pytester.path, GuidePage("guide:a", [("1 + 1", "2"), ("nnx.var_defaults()", "")]))
    result = run_docs(impl="brokendefaults")
    result.assert_outcomes(passed=1, failed=1)
    assert "INTERNALERROR" not in result.stdout.str(), "the run survives the implementation's failure"
