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
        """Work for ``node`` once it has collected: when two workers crash at once, xdist
        reschedules every node as the first replacement finishes collecting, and would
        look up the other replacement's collection before it exists."""
        if node in self.registered_collections:
            super()._reschedule(node)
