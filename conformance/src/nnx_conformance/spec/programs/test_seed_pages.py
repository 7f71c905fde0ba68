"""The five seed pages (the project's first spec: the object, variables, transforms and module
API pages and the NNX Basics guide, as the pinned flax renders them), run example by example
on the implementation and on flax.nnx beside it: each example must print what flax's prints
(object reprs included, addresses masked) and raise what flax's raises (kind "differential").

Where the doc tests compare an example with the output its page documents, this compares it
with what flax 0.12.12 does on the same page, so an example whose documented output comes
from another flax release, or that documents none, is guarded all the same."""

from __future__ import annotations

from typing import Any

import pytest

from nnx_conformance.docsuite import run_page_examples
from nnx_conformance.impl import FLAX_NNX
from nnx_conformance.manifest import Manifest
from nnx_conformance.testing.assertions import expected_got

pytestmark = [pytest.mark.kind("differential"), pytest.mark.documented("the seed pages")]

SEED_PAGES = ("object", "variables", "transforms", "module", "guide:nnx_basics")


@pytest.mark.apis("Module", "Variable", "jit")
@pytest.mark.timeout(600)  # a page runs twice, flax's side included: the transforms page takes a minute
@pytest.mark.parametrize("page_id", SEED_PAGES)
def test_every_example_of_a_seed_page_prints_and_raises_as_flax(
    nnx: Any, flax_nnx: Any, spec_manifest: Manifest, page_id: str
) -> None:
    (page,) = [page for page in spec_manifest.pages if page.id == page_id]
    with flax_nnx.active():
        expected = run_page_examples(page, FLAX_NNX)
    actual = run_page_examples(page, nnx.__name__)
    differences = [
        expected_got(f"{want.id} printed and raised", want.shown, got.shown)
        for want, got in zip(expected, actual)
        if want != got
    ]
    assert not differences, f"{len(differences)} of the {len(expected)} examples differ from flax's:\n" + "\n".join(
        differences
    )
