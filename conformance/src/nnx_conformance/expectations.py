"""Expected failures of an implementation, applied as strict xfails.

An expectations file (``conformance/expectations/flax.txt`` for ``flax.nnx``,
``reference.txt`` for ``nnx_reference``, or ``--expectations FILE``) lists test-id
patterns (``fnmatch``), each with ``# reason``. The **test id** a pattern is matched
against is:

- for a doc example, its manifest example id: ``object/flax.nnx.data:1``,
  ``guide:transforms/cell:12`` (stable across page regenerations, unlike line numbers);
- for any other suite test, its pytest node id relative to the ``spec`` folder:
  ``errors/test_graph.py::test_merge_rejects_a_state_that_does_not_match_its_graphdef``.

A listed test that passes fails the run (``XPASS(strict)``): fixed tests must leave
the list. Patterns that matched no collected test are reported as warnings.
"""

from __future__ import annotations

import pytest

from .patterns import PatternList

# The expectations file of each known implementation, under conformance/expectations/.
DEFAULT_FILES = {"flax.nnx": "flax.txt", "nnx_reference": "reference.txt"}


def apply(item: pytest.Item, test_id: str, expectations: PatternList) -> None:
    """Mark ``item`` as a strict xfail when an expectation pattern lists it."""
    entry = expectations.match(test_id)
    if entry is not None:
        item.add_marker(pytest.mark.xfail(strict=True, reason=entry.reason))
