"""Differential tests of ``with_vars`` and its deprecated name ``vars_as`` converting the
modes of Variables: ``hijax``, ``ref`` and ``mutable`` asked of a Variable of each mode; in a
Module, which Variables are replaced (those whose mode differs from the asked one), which are
kept as they are, whether a shared one stays shared, and when sharing is refused.

``mutable`` is drawn only where ``hijax`` or ``ref`` change too. Asked of a Variable whose
mode it leaves, ``mutable`` does what the hijax guide documents (an immutable Variable drops
its Ref and refuses writes, a mutable one gets it back: guide cells 8 to 11), which flax
0.12.12 refuses with an AttributeError; those cases are the guide's own examples."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnx_conformance.testing.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]

FLAGS = st.sampled_from([None, False, True])


class Conversion(NamedTuple):
    """A Param made with ``made`` (hijax, ref) converted with ``asked`` (hijax, ref, mutable; None: not given)."""

    made: tuple[bool, bool]
    asked: tuple[bool | None, bool | None, bool | None]

    def changes_mode(self) -> bool:
        return any(want is not None and want != had for want, had in zip(self.asked[:2], self.made))


conversions = st.builds(
    Conversion, made=st.tuples(st.booleans(), st.booleans()), asked=st.tuples(FLAGS, FLAGS, FLAGS)
).filter(lambda c: c.asked[2] is None or c.changes_mode())


@pytest.mark.apis("with_vars", "vars_as")
@pytest.mark.documented("guide:hijax (with_vars's hijax, ref and mutable)")
@pytest.mark.filterwarnings("ignore:This function is deprecated:DeprecationWarning")  # vars_as, in favour of with_vars
@given(conversion=conversions, function=st.sampled_from(["with_vars", "vars_as"]))
def test_with_vars_gives_the_asked_modes_as_flax(
    nnx: Any, flax_nnx: Any, conversion: Conversion, function: str
) -> None:
    hijax, ref = conversion.made
    asked = {k: v for k, v in zip(("hijax", "ref", "mutable"), conversion.asked) if v is not None}

    def scenario(nnx: Any) -> Any:
        param = nnx.Param(jnp.arange(3.0), hijax=hijax, ref=ref)
        converted = getattr(nnx, function)(param, **asked)
        metadata = converted.get_metadata()
        raw = converted.get_raw_value()
        return (
            {key: metadata.get(key) for key in ("hijax", "ref", "mutable")},
            type(raw).__name__ == "Ref",
            converted[...],
            sorted(param.get_metadata().items()),
        )

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.apis("with_vars")
@pytest.mark.documented(None)
@given(
    made=st.tuples(st.booleans(), st.booleans()),
    hijax=FLAGS,
    ref=FLAGS,
    allow_duplicates=st.booleans(),
    only=st.sampled_from(["everything", "Param"]),
)
def test_with_vars_on_a_module_replaces_only_the_variables_whose_mode_differs_as_flax(
    nnx: Any,
    flax_nnx: Any,
    made: tuple[bool, bool],
    hijax: bool | None,
    ref: bool | None,
    allow_duplicates: bool,
    only: str,
) -> None:
    """A Param held at two attributes beside a BatchStat: each Variable that ``only`` selects
    and whose mode differs is replaced by a copy in the asked mode (the shared one by one copy,
    given ``allow_duplicates``, else a ValueError); the others are the same objects."""
    asked = {key: value for key, value in (("hijax", hijax), ("ref", ref)) if value is not None}

    def scenario(nnx: Any) -> Any:
        module = nnx.Module()
        module.a = module.b = nnx.Param(jnp.arange(3.0), hijax=made[0], ref=made[1], tag="shared")
        module.c = nnx.BatchStat(jnp.zeros(2))
        out = nnx.with_vars(
            module, allow_duplicates=allow_duplicates, only=nnx.Param if only == "Param" else ..., **asked
        )
        kept = [getattr(out, name) is getattr(module, name) for name in "abc"]
        metadata = [list(getattr(out, name).get_metadata().items()) for name in "ac"]
        raws = [type(getattr(out, name).get_raw_value()).__name__ for name in "ac"]
        return kept, out.a is out.b, metadata, raws, out.a[...]

    assert_same(flax_nnx, nnx, scenario)


@pytest.mark.kind("property")
@pytest.mark.apis("with_vars", "Variable")
@pytest.mark.documented("guide:hijax (cell 9: a Variable made immutable refuses writes)")
@pytest.mark.parametrize("hijax", [False, True], ids=["plain", "hijax"])
def test_a_variable_made_immutable_refuses_writes(nnx: Any, hijax: bool) -> None:
    immutable = nnx.with_vars(nnx.Variable(jnp.array(0), hijax=hijax), mutable=False)
    assert not immutable.mutable, "with_vars(v, mutable=False) gives an immutable Variable"
    with pytest.raises(Exception, match="immutable") as raised:
        immutable[...] += 1
    assert type(raised.value).__name__ == "ImmutableVariableError", (
        f"a write to an immutable Variable raises ImmutableVariableError (the guide's), got {raised.value!r}"
    )


@pytest.mark.kind("property")
@pytest.mark.apis("with_vars", "Variable")
@pytest.mark.documented("guide:hijax (cell 11: an immutable Variable keeps its dropped Ref for mutable=True)")
@pytest.mark.parametrize("ref", [False, True], ids=["made without a Ref", "made with a Ref"])
@pytest.mark.parametrize("hijax", [False, True], ids=["plain", "hijax"])
def test_a_variable_made_mutable_again_has_a_ref_only_if_it_had_one(nnx: Any, hijax: bool, ref: bool) -> None:
    original = nnx.Variable(jnp.array(0), hijax=hijax, ref=ref)
    immutable = nnx.with_vars(original, mutable=False)
    assert not immutable.ref, "with_vars(v, mutable=False) drops the Variable's Ref (guide cell 11)"
    again = nnx.with_vars(immutable, mutable=True)
    assert again.ref == ref, (
        f"with_vars(immutable, mutable=True) of a Variable made with ref={ref} has ref={again.ref}: "
        "it gets back the Ref it had, and no other (guide cell 11)"
    )
