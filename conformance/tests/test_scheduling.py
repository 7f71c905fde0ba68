"""The scheduler when workers crash together: work sent to a worker that is already gone
goes back to the queue once xdist removes that worker, and the run goes on."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from nnx_conformance.scheduling import PageScheduling

_TESTS = [f"test_docs.py::test_doc[guide:{page}/cell:1@L1]" for page in "abcdef"]


@dataclass(eq=False)
class _Worker:
    """A stand-in for xdist's WorkerController: records what it is sent, or fails to
    send once its pipe is closed."""

    name: str
    pipe_closed: bool = False
    shutting_down: bool = False
    sent: list[list[int]] = field(default_factory=list)

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indices: list[int]) -> None:
        if self.pipe_closed:
            raise OSError("cannot send (already closed?)")
        self.sent.append(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduler(*workers: _Worker) -> PageScheduling:
    config = SimpleNamespace(
        getvalue=lambda name: [f"{len(workers)}*popen"], option=SimpleNamespace(loadscopereorder=False)
    )
    scheduler = PageScheduling(config, log=None)
    for worker in workers:
        _collect(scheduler, worker)
    scheduler.schedule()
    return scheduler


def _collect(scheduler: PageScheduling, worker: _Worker) -> None:
    """What xdist does as a worker starts and finishes collecting."""
    scheduler.add_node(worker)
    scheduler.add_node_collection(worker, _TESTS)


def _sent(worker: _Worker) -> set[str]:
    return {_TESTS[index] for indices in worker.sent for index in indices}


def test_two_workers_crashing_together_lose_no_work() -> None:
    first, second = _Worker("gw0"), _Worker("gw1")
    scheduler = _scheduler(first, second)
    first.pipe_closed = second.pipe_closed = True
    assert scheduler.remove_node(first) in _sent(first), "the first crashed worker's running test is named"
    assert scheduler.remove_node(second) in _sent(second), "the second crashed worker's running test is named"
    replacement = _Worker("gw2")
    _collect(scheduler, replacement)
    scheduler.schedule()
    run = 0
    while run < len(replacement.sent):
        for index in replacement.sent[run]:
            scheduler.mark_test_complete(replacement, index)
        run += 1
    assert _sent(replacement) == set(_TESTS), "the crashed workers' pages all go to the worker that replaces them"
    assert replacement.shutting_down, "the replacement is shut down once the queue is empty"
