"""How an example's actual output is compared with the output its page documents.

doctest's comparison (sybil's ``OutputChecker``, with the pages' flags) after removing
what no run can reproduce: terminal colour codes a notebook recorded, and memory
addresses (``<function f at 0x1172aa480>``). And, since the import alias makes
``flax.nnx`` *be* the implementation under test, the implementation's module path
in printed output reads as ``flax.nnx``: ``<class 'nnx_reference.variablelib.Param'>``
compares as ``<class 'flax.nnx.variablelib.Param'>``.

Under ``NUMBER`` a printed number matches the documented one within one unit of the
documented number's last digit, as sybil documents; the difference is taken in decimal, since
in binary ``0.05561923 - 0.05561922`` lands just past ``1e-8`` (a float32 reduction printed
one digit apart on another CPU).
"""

from __future__ import annotations

import doctest
import re
from copy import copy
from decimal import Decimal, InvalidOperation

from sybil.evaluators.doctest import NUMBER, OutputChecker

from .impl import FLAX_NNX

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
# A float as NUMBER reads one: a decimal point or an exponent (integers compare exactly).
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)")


def _within_last_digit(want: str, got: str) -> bool:
    """Whether ``got`` is within one unit of ``want``'s last written digit (in decimal)."""
    try:
        documented, printed = Decimal(want), Decimal(got)
    except InvalidOperation:
        return False
    return abs(documented - printed) <= Decimal(1).scaleb(documented.as_tuple().exponent)


def _documented_numbers(want: str, got: str) -> str:
    """``got`` with each number that matches its documented counterpart written as documented
    (numbers pair up in order; output with a different count of numbers is left as it is)."""
    wants, gots = list(_NUMBER.finditer(want)), list(_NUMBER.finditer(got))
    if len(wants) != len(gots):
        return got
    pieces, end = [], 0
    for w, g in zip(wants, gots):
        pieces += [got[end : g.start()], w.group() if _within_last_digit(w.group(), g.group()) else g.group()]
        end = g.end()
    return "".join(pieces) + got[end:]


class DocOutputChecker(OutputChecker):
    """sybil's output checker, comparing normalised output (see the module docstring)."""

    def __init__(self, impl_name: str) -> None:
        super().__init__()
        self._impl_path = None if impl_name == FLAX_NNX else re.compile(rf"(?<![\w.]){re.escape(impl_name)}\.")

    def normalize(self, text: str) -> str:
        text = _ADDRESS.sub("0x...", _ANSI_ESCAPE.sub("", text))
        return text if self._impl_path is None else self._impl_path.sub(FLAX_NNX + ".", text)

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        want, got = self.normalize(want), self.normalize(got)
        if optionflags & NUMBER:
            got = _documented_numbers(want, got)
        return super().check_output(want, got, optionflags)

    def output_difference(self, example: doctest.Example, got: str, optionflags: int) -> str:
        example = copy(example)
        example.want = self.normalize(example.want)
        return super().output_difference(example, self.normalize(got), optionflags)
