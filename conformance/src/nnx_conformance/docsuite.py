"""Running the documentation's examples: one pytest test per manifest example.

Examples of a page share one namespace and run in page order. When a test asks for
example ``n`` and earlier examples of its page have not run (deselected with ``-k``,
skipped as spec defects), they run first, silently, so that the page's state is what
its text assumes. Excluded examples never run: their names block later examples
like a failed example's do (see ``blocking``). Each page starts from the Variable
defaults the run began with (see ``var_defaults``), in the run's graph mode (see
``graph_modes``). An example passes only when it also emits the deprecations flax
emits on it (see ``doc_warnings``). A page that a crash took down in
another worker process is not run again here (see ``isolation``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sybil import Document, Example

from . import doc_warnings, docpages
from .blocking import Blockers
from .doc_warnings import DocWarnings, WarningKey
from .graph_modes import GraphMode
from .impl import Implementation, missing_name
from .isolation import PageClaims, blocked_by_crash
from .manifest import REGENERATE, ExampleEntry, Manifest, PageEntry, example_digest
from .outputs import DocOutputChecker
from .patterns import PatternList
from .var_defaults import VarDefaults

_HARNESS_OUTCOMES = (pytest.fail.Exception, pytest.skip.Exception, pytest.exit.Exception)
"""pytest outcomes raised inside an example: they decide its test, not its output."""

SPEC_DEFECT = "spec defect: "
EXCLUDED = "excluded from the spec: "


@dataclass
class _PageRun:
    """A page being run: its sybil examples, how far it got, what failures block."""

    document: Document
    examples: list[Example]
    next_index: int = 0
    blockers: Blockers = field(default_factory=Blockers)


class DocSuite:
    """The doc examples of a spec, run against the implementation under test."""

    def __init__(
        self,
        manifest: Manifest | None,
        problem: str | None,
        impl: Implementation,
        defects: PatternList,
        run_defects: bool,
        graph_mode: GraphMode,
        warnings: DocWarnings | None = None,
    ) -> None:
        self.manifest = manifest
        self.problem = problem
        self.impl = impl
        self.defects = defects
        self.run_defects = run_defects
        self.graph_mode = graph_mode
        self.warnings = warnings  # what flax emits on each example; None: not compared
        self.warned: dict[str, frozenset[WarningKey]] = {}  # what each example run here emitted
        self._runs: dict[str, _PageRun] = {}
        self._crashed: dict[str, str] = {}  # page id -> the example that crashed it elsewhere
        self.claims: PageClaims | None = None  # set in xdist workers
        self._var_defaults = VarDefaults.read(impl.module)
        self.collected = False  # whether the run collects the doc tests

    def cases(self) -> list[DocCase]:
        """One case per manifest example, in manifest order."""
        self.collected = True
        if self.manifest is None:
            return [DocCase(self, None, -1, None)]
        return [
            DocCase(self, page, index, entry)
            for page in self.manifest.pages
            for index, entry in enumerate(page.examples)
        ]

    def defect(self, entry: ExampleEntry) -> str | None:
        """The spec-defects reason for an example, if it is listed."""
        found = self.defects.match(entry.id)
        return None if found is None else found.reason

    def _page_run(self, page: PageEntry) -> _PageRun:
        if page.id not in self._runs:
            if not page.path.is_file():
                pytest.fail(f"page {page.id}: {page.path} is missing; {REGENERATE}", pytrace=False)
            if self.impl.module is not None:
                self.graph_mode.apply(self.impl.module)
            if self._var_defaults is not None:
                assert self.impl.module is not None  # the defaults were read from it
                self._var_defaults.restore(self.impl.module)
            document, examples = docpages.parse_page(page, self.impl.name)
            if len(examples) != len(page.examples):
                pytest.fail(
                    f"page {page.id}: the manifest lists {len(page.examples)} examples, "
                    f"{page.path} has {len(examples)}; the pages are stale: {REGENERATE}",
                    pytrace=False,
                )
            docpages.seed_namespace(document, page.kind)
            self._runs[page.id] = _PageRun(document, examples)
        return self._runs[page.id]

    def run(self, page: PageEntry, index: int) -> None:
        """Run example ``index`` of ``page`` (and, silently, any earlier one not yet run)."""
        if page.id not in self._runs and self.claims is not None:
            culprit = self._crashed.get(page.id) or self.claims.claim(page.id)
            if culprit is not None:
                self._crashed[page.id] = culprit
                pytest.skip(blocked_by_crash(culprit))
        state = self._page_run(page)
        for earlier in range(state.next_index, index):
            self._step(page, state, earlier, requested=False)
        state.next_index = max(state.next_index, index + 1)
        culprit, failure = self._step(page, state, index, requested=True)
        if culprit is not None:
            pytest.skip(f"blocked by {culprit}")
        if failure is not None:
            pytest.fail(failure, pytrace=False)

    def _step(self, page: PageEntry, state: _PageRun, index: int, requested: bool) -> tuple[str | None, str | None]:
        """Run example ``index`` of ``page`` unless an earlier failure blocks it or, run
        silently, it is excluded (then what it defines is blocked in turn). The requested
        example is first checked against the manifest's hash. Returns the culprit that
        blocked it and the failure message (None when it ran as documented)."""
        entry, example = page.examples[index], state.examples[index]
        source, output = docpages.source_and_output(example)
        if requested and example_digest(source, output) != entry.sha256:
            pytest.fail(
                f"{entry.id}: the example at {page.path}:{example.line} does not match the "
                f"manifest's hash; the pages are stale: {REGENERATE}",
                pytrace=False,
            )
        culprit = state.blockers.culprit(source)
        excluded = not requested and (entry.excluded or page.excluded)
        if excluded or culprit is not None:
            state.blockers.block(source, culprit or entry.id)
            return culprit, None
        return None, self._evaluate(example, source, state, entry, page)

    def _evaluate(
        self, example: Example, source: str, state: _PageRun, entry: ExampleEntry, page: PageEntry
    ) -> str | None:
        """Run one example (``source`` is its source); the failure message, or None when it ran as documented."""
        if self.claims is not None:
            self.claims.starting(page.id, entry.id)
        with doc_warnings.recording() as recorded:
            result = example.region.evaluator(example)
        self.warned[entry.id] = recorded.keys()
        raised = docpages.last_exception(example)
        if raised is not None:
            state.blockers.block(source, entry.id, docpages.failed_line(example, raised))
            if isinstance(raised[1], _HARNESS_OUTCOMES):  # e.g. the suite's timeout stopped the example
                raise raised[1]
            missing = missing_name(raised[1], self.impl.name)
            if missing is not None:
                return missing
        else:
            state.blockers.release(source)
        if result:
            return f"{entry.id} ({page.path.name}:{entry.line}) did not run as documented:\n{result}"
        if self.warnings is None:
            return None
        mismatch = doc_warnings.difference(self.warnings.expected(entry.id), self.warned[entry.id])
        return (
            None
            if mismatch is None
            else f"{entry.id} ({page.path.name}:{entry.line}) does not warn as documented: {mismatch}"
        )


@dataclass(frozen=True)
class ExampleRun:
    """What one example did: what it printed (normalised as ``outputs`` compares output) and
    the class name of the exception it raised, if any."""

    id: str
    printed: str
    raised: str | None

    @property
    def shown(self) -> str:
        """What the example did, in a line of a failure message."""
        printed = self.printed.rstrip() or "nothing"
        return printed if self.raised is None else f"{printed}, then {self.raised}"


def run_page_examples(page: PageEntry, impl_name: str) -> list[ExampleRun]:
    """Every example of ``page`` in order in one fresh namespace, each run whatever the ones
    before it did, with its output normalised for ``impl_name`` (addresses masked, the
    implementation's module path read as flax.nnx). The seed pages' differential test runs
    a page so on the implementation and, with the import alias suspended, on flax."""
    document, examples = docpages.parse_page(page, impl_name)
    docpages.seed_namespace(document, page.kind)
    normalise = DocOutputChecker(impl_name).normalize
    runs = []
    for entry, example in zip(page.examples, examples):
        raised = None
        try:
            printed = docpages.printed_by(example)
        except Exception as error:  # noqa: BLE001 - the exception's class is part of what the example did
            printed, raised = "", type(error).__name__
        runs.append(ExampleRun(entry.id, normalise(printed), raised))
    return runs


def page_problems(manifest: Manifest, impl_name: str) -> list[str]:
    """Where the generated pages do not hold what the manifest pins: a missing page,
    another number of examples, an example whose hash differs."""
    problems = []
    for page in manifest.pages:
        if not page.path.is_file():
            problems.append(f"page {page.id}: {page.path} is missing")
            continue
        _, examples = docpages.parse_page(page, impl_name)
        if len(examples) != len(page.examples):
            problems.append(
                f"page {page.id}: the manifest lists {len(page.examples)} examples, {page.path} has {len(examples)}"
            )
            continue
        problems += [
            f"{entry.id}: the example at {page.path}:{example.line} does not match the manifest's hash"
            for entry, example in zip(page.examples, examples)
            if example_digest(*docpages.source_and_output(example)) != entry.sha256
        ]
    return problems


@dataclass(frozen=True)
class Skip:
    """Why a doc example is not run: the skip reason, and whether it is a spec defect
    (listed in ``spec_defects.txt``; else the manifest excludes it)."""

    reason: str
    spec_defect: bool


@dataclass
class DocCase:
    """One doc example, the parameter of ``test_doc``."""

    suite: DocSuite
    page: PageEntry | None
    index: int
    entry: ExampleEntry | None

    @property
    def param_id(self) -> str:
        if self.entry is None:
            return "no-spec"
        return f"{self.entry.id}@L{self.entry.line}"

    @property
    def test_id(self) -> str:
        return "no-spec" if self.entry is None else self.entry.id

    def skip(self) -> Skip | None:
        """Why the example is not run by default (exclusion or spec defect), if it is not."""
        if self.page is None or self.entry is None:
            return None
        defect = self.suite.defect(self.entry)  # looked up always, so that unused entries show
        if self.page.excluded:
            return Skip(EXCLUDED + (self.page.reason or "the page is excluded"), spec_defect=False)
        if self.entry.excluded:
            return Skip(EXCLUDED + (self.entry.reason or "no reason given"), spec_defect=False)
        if defect is not None and not self.suite.run_defects:
            return Skip(SPEC_DEFECT + defect, spec_defect=True)
        return None

    def run(self) -> None:
        if self.page is None:
            pytest.fail(self.suite.problem or f"no spec pages; {REGENERATE}", pytrace=False)
        self.suite.run(self.page, self.index)
