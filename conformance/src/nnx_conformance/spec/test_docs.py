"""The documentation's examples, one test per manifest example (kind "doc").

The plugin parametrizes ``doc_example`` with the examples of every page in the
manifest of ``--spec-dir``; test ids read ``test_doc[<example id>@L<line>]``, e.g.
``test_doc[object/flax.nnx.data:1@L24]``, where the line is the example's first line
in its generated page.
"""

from nnx_conformance.docsuite import DocCase


def test_doc(doc_example: DocCase) -> None:
    doc_example.run()
