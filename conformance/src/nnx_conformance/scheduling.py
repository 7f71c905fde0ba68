"""How pytest-xdist shares the suite among its workers: a doc page's examples in order,
in one worker; every other test on its own."""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

from .items import doc_page_of


class PageScheduling(LoadScopeScheduling):
    """xdist's scope scheduler with a scope per doc page, and one per other test."""

    def _split_scope(self, nodeid: str) -> str:
        page = doc_page_of(nodeid)
        return nodeid if page is None else f"page {page}"

    def _reschedule(self, node: object) -> None:
        """Work for ``node`` once it has collected and while it can be reached.

        When two workers crash at once, xdist reschedules every node as the first one is
        removed or its replacement finishes collecting: it would look up the other
        replacement's collection before it exists, or send work down the pipe of the other
        crashed worker before xdist has seen it go. That worker's work goes back to the
        queue when xdist removes it, so here it is left for then."""
        if node not in self.registered_collections:
            return
        try:
            super()._reschedule(node)
        except OSError:
            return
