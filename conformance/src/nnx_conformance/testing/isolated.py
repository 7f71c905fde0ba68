"""Running a snippet that may recurse forever in a fresh interpreter, with a time limit.

An implementation that walks a cycle of a graph without noticing recurses until Python
stops it; under CPython 3.12 such a RecursionError can leave the process unable to run
anything deep afterwards. Snippets that risk it run here instead, one interpreter per
implementation, and report the exception each case raised.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

TIMEOUT_S = 120.0

_RUNNER = """
import importlib, json
nnx = importlib.import_module({impl!r})
{setup}
outcomes = {{}}
for name, case in CASES.items():
    try:
        case(nnx)
        outcomes[name] = None
    except BaseException as error:
        outcomes[name] = [[c.__name__ for c in type(error).__mro__], str(error)[:300]]
print("OUTCOMES " + json.dumps(outcomes))
"""


def exceptions(impl: str, setup: str) -> dict[str, tuple[list[str], str] | None]:
    """For each case of ``setup`` (source that defines ``CASES``, a dict of name to
    ``case(nnx)``), the class names (MRO) and message of the exception it raised on
    ``impl``, or None if it returned."""
    code = _RUNNER.format(impl=impl, setup=textwrap.dedent(setup))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S)
    for line in done.stdout.splitlines():
        if line.startswith("OUTCOMES "):
            return {k: (v[0], v[1]) if v else None for k, v in json.loads(line.removeprefix("OUTCOMES ")).items()}
    raise AssertionError(f"{impl}: the isolated run ended without a result:\n{done.stderr[-2000:]}")
