"""Laws of filters: the Any/All/Not algebra, the constants, and the shorthand forms."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing import strategies

pytestmark = pytest.mark.kind("property")

paths = st.lists(st.sampled_from(strategies.ATTRIBUTE_NAMES), min_size=1, max_size=3).map(tuple)
"""Paths of Variables inside a graph: one to three attribute names."""


def matches(nnx: Any, filter_: Any, path: tuple[Any, ...], variable: Any) -> bool:
    """Whether ``filter_`` (any form) matches the Variable at ``path``."""
    return bool(nnx.filterlib.to_predicate(filter_)(path, variable))


def draw_point(nnx: Any, data: st.DataObject) -> tuple[tuple[Any, ...], Any]:
    return data.draw(paths, label="path"), data.draw(strategies.variables(nnx), label="variable")


def assert_not_negates(nnx: Any, filter_: Any, path: tuple[Any, ...], variable: Any) -> None:
    """Not(filter_) matches at the point exactly when ``filter_`` does not, and Not(Not(filter_)) when it does."""
    __tracebackhide__ = True
    inner, negated = matches(nnx, filter_, path, variable), matches(nnx, nnx.Not(filter_), path, variable)
    assert negated == (not inner), (
        f"Not({filter_!r}) gave {negated} at {path} for {variable!r}; the filter gave {inner}"
    )
    double = matches(nnx, nnx.Not(nnx.Not(filter_)), path, variable)
    assert double == inner, f"Not(Not({filter_!r})) gave {double} at {path}; the filter gave {inner}"


@pytest.mark.apis("Not", "filterlib.to_predicate")
@given(data=st.data())
def test_not_matches_exactly_what_its_filter_does_not_match(nnx: Any, data: st.DataObject) -> None:
    filter_ = data.draw(strategies.filters(nnx), label="filter")
    assert_not_negates(nnx, filter_, *draw_point(nnx, data))


@pytest.mark.apis("Not", "filterlib.to_predicate")
@pytest.mark.parametrize("form", sorted(strategies.ATOM_FORMS))
@given(data=st.data())
def test_not_negates_every_form_of_single_filter(nnx: Any, form: str, data: st.DataObject) -> None:
    """The law above for each form on its own, so that every run checks Not of each form."""
    filter_ = data.draw(strategies.ATOM_FORMS[form](nnx), label="filter")
    assert_not_negates(nnx, filter_, *draw_point(nnx, data))


@pytest.mark.apis("Any", "filterlib.to_predicate")
@given(data=st.data())
def test_any_matches_when_at_least_one_of_its_filters_matches(nnx: Any, data: st.DataObject) -> None:
    filters = data.draw(st.lists(strategies.filters(nnx), min_size=1, max_size=3), label="filters")
    path, variable = draw_point(nnx, data)
    parts = [matches(nnx, f, path, variable) for f in filters]
    combined = matches(nnx, nnx.Any(*filters), path, variable)
    assert combined == any(parts), f"Any(*{filters!r}) gave {combined} at {path}; its filters gave {parts}"


@pytest.mark.apis("All", "filterlib.to_predicate")
@given(data=st.data())
def test_all_matches_when_every_one_of_its_filters_matches(nnx: Any, data: st.DataObject) -> None:
    filters = data.draw(st.lists(strategies.filters(nnx), min_size=1, max_size=3), label="filters")
    path, variable = draw_point(nnx, data)
    parts = [matches(nnx, f, path, variable) for f in filters]
    combined = matches(nnx, nnx.All(*filters), path, variable)
    assert combined == all(parts), f"All(*{filters!r}) gave {combined} at {path}; its filters gave {parts}"


@pytest.mark.apis("Any", "All", "Not")
@given(data=st.data())
def test_de_morgan_laws_hold(nnx: Any, data: st.DataObject) -> None:
    first, second = (
        data.draw(strategies.filters(nnx), label="first filter"),
        data.draw(strategies.filters(nnx), label="second filter"),
    )
    path, variable = draw_point(nnx, data)
    pairs = {
        "Not(Any(f, g)) vs All(Not(f), Not(g))": (
            nnx.Not(nnx.Any(first, second)),
            nnx.All(nnx.Not(first), nnx.Not(second)),
        ),
        "Not(All(f, g)) vs Any(Not(f), Not(g))": (
            nnx.Not(nnx.All(first, second)),
            nnx.Any(nnx.Not(first), nnx.Not(second)),
        ),
    }
    for law, (left, right) in pairs.items():
        got = matches(nnx, left, path, variable), matches(nnx, right, path, variable)
        assert got[0] == got[1], f"{law} gave {got} with f={first!r}, g={second!r} at {path}"


@pytest.mark.apis("Everything", "Nothing")
@given(data=st.data())
def test_everything_matches_all_and_nothing_matches_none(nnx: Any, data: st.DataObject) -> None:
    path, variable = draw_point(nnx, data)
    for form in (nnx.Everything(), ..., True):
        assert matches(nnx, form, path, variable), f"{form!r} did not match {variable!r} at {path}"
    for form in (nnx.Nothing(), False):
        assert not matches(nnx, form, path, variable), f"{form!r} matched {variable!r} at {path}"
    filter_ = data.draw(strategies.filters(nnx), label="filter")
    alone = matches(nnx, filter_, path, variable)
    identities = {
        "Any(f, Nothing())": nnx.Any(filter_, nnx.Nothing()),
        "All(f, Everything())": nnx.All(filter_, nnx.Everything()),
    }
    for name, form in identities.items():
        got = matches(nnx, form, path, variable)
        assert got == alone, f"{name} gave {got} with f={filter_!r} at {path}, expected f's {alone}"


@pytest.mark.apis("OfType", "WithTag", "filterlib.to_predicate")
@given(data=st.data())
def test_shorthand_forms_equal_their_explicit_forms(nnx: Any, data: st.DataObject) -> None:
    path, variable = draw_point(nnx, data)
    variable_type = data.draw(strategies.variable_types(nnx), label="type")
    tag = data.draw(st.sampled_from(strategies.TAGS), label="tag")
    forms = {
        f"{variable_type.__name__} vs OfType": (variable_type, nnx.OfType(variable_type)),
        f"{tag!r} vs WithTag": (tag, nnx.WithTag(tag)),
        "... vs Everything()": (..., nnx.Everything()),
        "True vs Everything()": (True, nnx.Everything()),
        "False vs Nothing()": (False, nnx.Nothing()),
        "a list vs Any": ([variable_type, tag], nnx.Any(variable_type, tag)),
    }
    for name, (short, explicit) in forms.items():
        got = matches(nnx, short, path, variable), matches(nnx, explicit, path, variable)
        assert got[0] == got[1], f"{name} disagree (shorthand, explicit) = {got} for {variable!r} at {path}"


@pytest.mark.apis("OfType", "WithTag", "PathContains")
@given(data=st.data())
def test_atomic_filters_match_as_the_filters_guide_says(nnx: Any, data: st.DataObject) -> None:
    path, variable = draw_point(nnx, data)
    variable_type = data.draw(strategies.variable_types(nnx), label="type")
    tag = data.draw(st.sampled_from(strategies.TAGS), label="tag")
    name = data.draw(st.sampled_from(strategies.ATTRIBUTE_NAMES), label="path part")
    cases = {
        f"OfType({variable_type.__name__})": (nnx.OfType(variable_type), isinstance(variable, variable_type)),
        f"WithTag({tag!r})": (nnx.WithTag(tag), variable.get_metadata().get("tag") == tag),
        f"PathContains({name!r})": (nnx.PathContains(name), name in path),
        f"callable {strategies.PathEndsWith(name)!r}": (strategies.PathEndsWith(name), path[-1] == name),
    }
    for label, (filter_, expected) in cases.items():
        got = matches(nnx, filter_, path, variable)
        assert got == expected, f"{label} gave {got} for {variable!r} at {path}, expected {expected}"


@pytest.mark.apis("OfType", "Param")
@given(data=st.data())
def test_a_type_filter_matches_subclasses(nnx: Any, data: st.DataObject) -> None:
    path = data.draw(paths, label="path")
    subclass_variable = data.draw(
        strategies.variables(nnx, types=st.just(strategies.classes(nnx).custom_param)), label="variable"
    )
    for form in (nnx.Param, nnx.OfType(nnx.Param), nnx.Variable):
        assert matches(nnx, form, path, subclass_variable), (
            f"{form!r} did not match the Param subclass {subclass_variable!r}"
        )
