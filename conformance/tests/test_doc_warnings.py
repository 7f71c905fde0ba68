"""Doc examples emit flax's deprecations: the committed record, and an extra or missing one failing."""

from __future__ import annotations

import pytest
from specbuilder import GuidePage, write_spec

from nnx_conformance.doc_warnings import DATA, DocWarnings, WarningKey, deprecated_name, difference


@pytest.mark.parametrize(
    ("message", "name"),
    [
        ("`flax.nnx.State` will be deprecated and be replaced by the built-in Python dict.", "State"),
        ("'.value' access is now deprecated. For Variable[Array] instances use: ...", ".value"),
        ("The 'split' argument of 'fork' is deprecated; use the 'split' method instead.", "split"),
        ("This function is deprecated.\nUse with_vars instead.", "This function is deprecated."),
    ],
)
def test_a_warning_is_known_by_the_first_name_its_message_quotes(message: str, name: str) -> None:
    assert deprecated_name(message) == name


def test_a_missing_and_an_extra_deprecation_are_both_named() -> None:
    expected = frozenset({WarningKey("DeprecationWarning", "State")})
    got = frozenset({WarningKey("FutureWarning", "split")})
    assert difference(expected, got) == (
        "flax 0.12.12 emits DeprecationWarning naming 'State', which the implementation does not; "
        "the implementation emits FutureWarning naming 'split', which flax 0.12.12 does not"
    )
    assert difference(expected, expected) is None


def test_the_committed_record_reads_back_as_it_is_written() -> None:
    record = DocWarnings.read()
    assert record.examples, "flax 0.12.12 warns on some doc examples"
    assert DATA.read_text(encoding="utf-8") == record.dumps(), "the record is as tools/doc_warnings.py writes it"


def test_an_example_that_emits_a_deprecation_flax_does_not_fails(pytester: pytest.Pytester, run_docs) -> None:
    write_spec(
        pytester.path,
        GuidePage(
            "guide:g",
            [
                ("import warnings\nwarnings.warn('`nnx.Thing` is slow', UserWarning)", None),
                ("warnings.warn(\"'thing' is deprecated\", DeprecationWarning)", None),
            ],
        ),
    )
    result = run_docs()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*guide:g/cell:2 * does not warn as documented: the implementation emits "
            "DeprecationWarning naming 'thing', which flax 0.12.12 does not*"
        ]
    )
