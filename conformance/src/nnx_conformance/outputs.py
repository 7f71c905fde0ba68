"""How an example's actual output is compared with the output its page documents.

doctest's comparison (sybil's ``OutputChecker``, with the pages' flags) after removing
what no run can reproduce: terminal colour codes a notebook recorded, and memory
addresses (``<function f at 0x1172aa480>``). And, since the import alias makes
``flax.nnx`` *be* the implementation under test, the implementation's module path
in printed output reads as ``flax.nnx``: ``<class 'nnx_reference.variablelib.Param'>``
compares as ``<class 'flax.nnx.variablelib.Param'>``.
"""

from __future__ import annotations

import doctest
import re
from copy import copy

from sybil.evaluators.doctest import OutputChecker

from .impl import FLAX_NNX

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


class DocOutputChecker(OutputChecker):
    """sybil's output checker, comparing normalised output (see the module docstring)."""

    def __init__(self, impl_name: str) -> None:
        super().__init__()
        self._impl_path = None if impl_name == FLAX_NNX else re.compile(rf"(?<![\w.]){re.escape(impl_name)}\.")

    def normalize(self, text: str) -> str:
        text = _ADDRESS.sub("0x...", _ANSI_ESCAPE.sub("", text))
        return text if self._impl_path is None else self._impl_path.sub(FLAX_NNX + ".", text)

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        return super().check_output(self.normalize(want), self.normalize(got), optionflags)

    def output_difference(self, example: doctest.Example, got: str, optionflags: int) -> str:
        example = copy(example)
        example.want = self.normalize(example.want)
        return super().output_difference(example, self.normalize(got), optionflags)
