"""Running the documentation's examples: one pytest test per manifest example.

Examples of a page share one namespace and run in page order. When a test asks for
example ``n`` and earlier examples of its page have not run (deselected with ``-k``,
skipped as spec defects), they run first, silently, so that the page's state is what
its text assumes. Excluded examples never run: their names block later examples
like a failed example's do (see ``blocking``). Each page starts from the Variable
defaults the run began with (see ``var_defaults``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sybil import Document, Example

from . import docpages
from .blocking import Blockers
from .impl import Implementation, missing_name
from .manifest import REGENERATE, ExampleEntry, Manifest, PageEntry
from .patterns import PatternList
from .var_defaults import VarDefaults

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

    def __init__(self, manifest: Manifest | None, problem: str | None, impl: Implementation,
                 defects: PatternList, run_defects: bool) -> None:
        self.manifest = manifest
        self.problem = problem
        self.impl = impl
        self.defects = defects
        self.run_defects = run_defects
        self._runs: dict[str, _PageRun] = {}
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
            if self._var_defaults is not None:
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
        state = self._page_run(page)
        for earlier in range(state.next_index, index):
            self._run_silently(page, state, earlier)
        state.next_index = max(state.next_index, index + 1)
        entry, example = page.examples[index], state.examples[index]
        self._check_digest(entry, example, page)
        source, _ = docpages.source_and_output(example)
        culprit = state.blockers.culprit(source)
        if culprit is not None:
            state.blockers.block(source, culprit)
            pytest.skip(f"blocked by {culprit}")
        failure = self._evaluate(example, state, entry, page)
        if failure is not None:
            pytest.fail(failure, pytrace=False)

    def _run_silently(self, page: PageEntry, state: _PageRun, index: int) -> None:
        entry, example = page.examples[index], state.examples[index]
        source, _ = docpages.source_and_output(example)
        culprit = state.blockers.culprit(source)
        if entry.excluded or page.excluded or culprit is not None:
            state.blockers.block(source, culprit or entry.id)
        else:
            self._evaluate(example, state, entry, page)

    def _check_digest(self, entry: ExampleEntry, example: Example, page: PageEntry) -> None:
        if docpages.digest(example) != entry.sha256:
            pytest.fail(
                f"{entry.id}: the example at {page.path}:{example.line} does not match the "
                f"manifest's hash; the pages are stale: {REGENERATE}",
                pytrace=False,
            )

    def _evaluate(self, example: Example, state: _PageRun, entry: ExampleEntry, page: PageEntry) -> str | None:
        """Run one example; the failure message, or None when it ran as documented."""
        source, _ = docpages.source_and_output(example)
        result = example.region.evaluator(example)
        raised = docpages.last_exception(example)
        if raised is not None:
            state.blockers.block(source, entry.id, docpages.failed_line(example, raised))
            missing = missing_name(raised[1], self.impl.name)
            if missing is not None:
                return missing
        else:
            state.blockers.release(source)
        if not result:
            return None
        return f"{entry.id} ({page.path.name}:{entry.line}) did not run as documented:\n{result}"


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

    def skip_reason(self) -> str | None:
        """Why the example is not run by default (exclusion or spec defect), if it is not."""
        if self.page is None or self.entry is None:
            return None
        defect = self.suite.defect(self.entry)  # looked up always, so that unused entries show
        if self.page.excluded:
            return EXCLUDED + (self.page.reason or "the page is excluded")
        if self.entry.excluded:
            return EXCLUDED + (self.entry.reason or "no reason given")
        if defect is not None and not self.suite.run_defects:
            return SPEC_DEFECT + defect
        return None

    def run(self) -> None:
        if self.page is None:
            pytest.fail(self.suite.problem or f"no spec pages; {REGENERATE}", pytrace=False)
        self.suite.run(self.page, self.index)


