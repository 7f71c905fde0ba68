"""Differential tests of ``with_vars`` and its deprecated name ``vars_as`` converting the
modes of Variables: ``hijax``, ``ref`` and ``mutable`` asked of a Variable of each mode.

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

from nnx_conformance.assertions import assert_same

pytestmark = [pytest.mark.kind("differential"), pytest.mark.area("graph")]

FLAGS = st.sampled_from([None, False, True])


class Conversion(NamedTuple):
    """A Param made with ``made`` (hijax, ref) converted with ``asked`` (hijax, ref, mutable; None: not given)."""

    made: tuple[bool, bool]
    asked: tuple[bool | None, bool | None, bool | None]

    def changes_mode(self) -> bool:
        return any(want is not None and want != had for want, had in zip(self.asked[:2], self.made))


conversions = st.builds(Conversion, made=st.tuples(st.booleans(), st.booleans()), asked=st.tuples(FLAGS, FLAGS, FLAGS)).filter(
    lambda c: c.asked[2] is None or c.changes_mode()
)


@pytest.mark.apis("with_vars", "vars_as")
@pytest.mark.documented("guide:hijax (with_vars's hijax, ref and mutable)")
@pytest.mark.filterwarnings("ignore:This function is deprecated:DeprecationWarning")  # vars_as, in favour of with_vars
@given(conversion=conversions, function=st.sampled_from(["with_vars", "vars_as"]))
def test_with_vars_gives_the_asked_modes_as_flax(nnx: Any, flax_nnx: Any, conversion: Conversion, function: str) -> None:
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
