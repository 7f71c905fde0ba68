"""Guide pages: notebook cells as sybil examples, run the way a Jupyter kernel runs them.

A guide page holds, for each code cell of the notebook::

    <!-- cell: 7 -->
    ```python
    <source>
    ```
    <!-- output -->
    ```text
    <the text output the notebook shows>
    ```

:class:`CellLexer` finds them, :class:`CellParser` makes sybil regions of them and
:class:`CellEvaluator` runs each cell as a kernel does: every statement is executed;
when the last one is an expression (not ending in ``;``) its ``repr`` is the cell's
result, shown unless it is None. What is compared with the output block (doctest's
OutputChecker, with the API pages' flags) is the cell's stdout followed by that
result. As in a notebook, ``nnx.display`` renders a rich display (``display_data``),
which the pages do not hold and which is not compared: the kernel gives
``flax.nnx.display`` somewhere else to write. A cell without an output block only
has to run: notebooks drop text output when it sits next to rich output or when
they were stored without outputs.

Two more things a notebook's kernel gives its cells: a kernel runs them in
``__main__`` (so a class defined in a cell prints as ``<class '__main__.Foo'>``), and
each notebook starts a fresh kernel, so a cell may set JAX options that only apply
before JAX starts its backends (``jax_num_cpu_devices``); here JAX is already running,
and such a call is accepted when JAX already has what it asks for.

Output is compared as ``outputs`` says.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import linecache
import re
import sys
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from sybil import Document, Example, Region
from sybil.region import Lexeme

from .outputs import DocOutputChecker

_CELL = re.compile(
    r"^<!-- cell: (?P<number>\d+) -->\n"
    r"(?P<fence>`{3,})python\n(?P<source>.*?)^(?P=fence)[ \t]*\n"
    r"(?:\s*^<!-- output -->\n(?P<ofence>`{3,})text\n(?P<output>.*?)^(?P=ofence)[ \t]*$)?",
    re.MULTILINE | re.DOTALL,
)

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


@dataclass(frozen=True)
class Cell:
    """A notebook code cell: its number, source and expected text output (if any)."""

    number: int
    source: str
    output: str | None


class CellLexer:
    """Finds the ``<!-- cell: n -->`` blocks of a guide page."""

    def __call__(self, document: Document) -> Iterator[Region]:
        for match in _CELL.finditer(document.text):
            lexemes = {"number": match.group("number")}
            for name in ("source", "output"):
                if match.group(name) is not None:
                    offset = match.start(name) - match.start()
                    lines = document.text.count("\n", match.start(), match.start(name))
                    lexemes[name] = Lexeme(match.group(name), offset, lines)
            yield Region(match.start(), match.end(), lexemes=lexemes)


class CellParser:
    """The sybil parser of guide pages: one example per notebook cell."""

    def __init__(self, evaluator: CellEvaluator) -> None:
        self.lexer = CellLexer()
        self.evaluator = evaluator

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.lexer(document):
            output = region.lexemes.get("output")
            region.parsed = Cell(
                int(region.lexemes["number"]),
                str(region.lexemes["source"]),
                None if output is None else str(output),
            )
            region.evaluator = self.evaluator
            yield region


def _strip_magics(source: str) -> str:
    """Source with IPython shell escapes and line magics (``!pip ...``, ``%...``) commented out."""
    return re.sub(r"^([ \t]*)([!%])", r"\1# \2", source, flags=re.MULTILINE)


class _DisplayData(io.StringIO):
    """Where a rich display goes: kept apart from the cell's stdout, never compared."""


@contextlib.contextmanager
def _kernel_display() -> Iterator[None]:
    """Route ``flax.nnx.display`` (whatever module ``flax.nnx`` is) to display data."""
    nnx = sys.modules.get("flax.nnx")
    original = getattr(nnx, "display", None)
    if nnx is None or original is None:
        yield
        return

    def display(*objects: Any) -> None:
        with contextlib.redirect_stdout(_DisplayData()):
            original(*objects)

    nnx.display = display  # type: ignore[attr-defined]
    try:
        yield
    finally:
        nnx.display = original  # type: ignore[attr-defined]


def _already_in_effect(option: str, value: Any) -> bool:
    """Whether a start-up-only JAX option already has the value a cell asks for."""
    import jax

    return option == "jax_num_cpu_devices" and len(jax.devices("cpu")) == value


@contextlib.contextmanager
def _started_jax() -> Iterator[None]:
    """Accept start-up-only JAX options a fresh kernel would take, when already in effect."""
    jax = sys.modules.get("jax")
    if jax is None:
        yield
        return
    config = jax.config
    update = config.update

    def update_once_started(option: str, value: Any) -> None:
        try:
            update(option, value)
        except RuntimeError:
            if not _already_in_effect(option, value):
                raise

    config.update = update_once_started
    try:
        yield
    finally:
        del config.update  # back to the class's own method


def cache_source(filename: str, source: str) -> None:
    """Keep ``source`` in linecache as ``filename``, so that tracebacks show its lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def run_cell(source: str, namespace: dict[str, Any], filename: str) -> str:
    """Run ``source`` like a kernel; return its stdout followed by its shown result."""
    source = _strip_magics(source)
    cache_source(filename, source)
    tree = ast.parse(source, filename)
    last = tree.body[-1] if tree.body else None
    shows_result = isinstance(last, ast.Expr) and not source.rstrip().endswith(";")
    body = tree.body[:-1] if shows_result else tree.body
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), _kernel_display(), _started_jax():
        exec(compile(ast.Module(body, type_ignores=[]), filename, "exec"), namespace)
        if shows_result:
            assert isinstance(last, ast.Expr)
            result = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
            if result is not None:
                namespace["_"] = result
                print(repr(result))
    return stdout.getvalue()


class SourceEvaluator:
    """What the evaluators that execute an example's source in its page's namespace share
    (guide cells here, API pages' code blocks in ``docpages``): an example that raises
    gives its traceback, from the example's own frames on, as its result, and the
    exception is kept as ``last_exception``.

    A subclass names the example's source (``filename``, what tracebacks show; the source
    must be compiled under that name and put in linecache with :func:`cache_source`),
    runs it (``execute``: what it printed) and compares what it printed (``compare``).
    """

    def __init__(self) -> None:
        self.last_exception: ExcInfo | None = None

    def filename(self, example: Example) -> str:
        raise NotImplementedError

    def execute(self, example: Example, filename: str) -> str:
        raise NotImplementedError

    def compare(self, example: Example, got: str) -> str:
        """An empty string when ``got`` is what the example documents, else the difference."""
        return ""

    def __call__(self, example: Example) -> str:
        self.last_exception = None
        filename = self.filename(example)
        try:
            got = self.execute(example, filename)
        except Exception:  # noqa: BLE001 - a documented example may raise anything; its traceback is the result
            exc_type, exc, tb = sys.exc_info()
            assert exc_type is not None and exc is not None
            while tb is not None and tb.tb_frame.f_code.co_filename != filename:
                tb = tb.tb_next  # the example's own frames are what a reader needs
            self.last_exception = (exc_type, exc, tb)
            return "".join(traceback.format_exception(exc_type, exc, tb))
        return self.compare(example, got)


class CellEvaluator(SourceEvaluator):
    """Runs a guide cell and compares its text output; keeps the exception a cell raised."""

    def __init__(self, optionflags: int, checker: DocOutputChecker) -> None:
        super().__init__()
        self.optionflags = optionflags
        self.checker = checker

    def filename(self, example: Example) -> str:
        return f"<{example.path}:cell {example.parsed.number}>"

    def execute(self, example: Example, filename: str) -> str:
        return run_cell(example.parsed.source, example.namespace, filename)

    def compare(self, example: Example, got: str) -> str:
        cell: Cell = example.parsed
        if cell.output is None or self.checker.check_output(cell.output, got, self.optionflags):
            return ""
        return self.checker.output_difference(doctest.Example(cell.source, cell.output), got, self.optionflags)
