"""Mutation testing of the reference, judged by the whole conformance suite.

cosmic-ray lists the mutations of ``nnx_reference`` (or of one module); a seeded
sample of them is drawn, and each mutant is judged in a fresh pytest process against
a fresh copy of the package, put first on PYTHONPATH, with JAX's persistent compilation
cache off: nothing compiled from another copy can judge it. The suite and the reference
are those of the last commit (``git archive HEAD``; ``--commit REV``: another's), so
edits in progress in the work tree judge nothing; ``--worktree`` takes the work tree's instead.

An unmutated copy runs the whole suite first, recording which tests run each line
(``mutation_lines``): if it fails, nothing is judged. A mutant inside a function body
is judged by the tests that ran its line (stage ``covering``); one whose line no test
ran survives unjudged (stage ``uncovered``). Any other mutant (a line that also runs at
import: definitions, defaults, class attributes) is judged first by the tests of its
module's areas and names (``mutation_focus``) and, only if they all pass, by the whole
suite. Every run stops at its first failure; a run past the timeout counts as killed.
A mutant the suite lets survive is then run against the reference's own tests
(``reference/tests``, for its machinery that no implementation shares, such as the
plain-text table drawn without rich): the score stays the suite's, and the survivors
those tests kill are counted apart.

    python -m tools.mutation [--sample N] [--seed S] [--per-module M] [--module nnx_reference.nn.linear] [--jobs 2]
    python -m tools.mutation --rejudge reports/mutation/results.json --out reports/mutation/rejudged
    python -m tools.mutation --resume reports/mutation/results.json [--commit REV] [--jobs 2]

A run that was stopped goes on with ``--resume``: the same sample (size, seed, per-module
draw) of the same commit's reference, judged by that commit's suite (``--commit`` names it
for a results.json that does not record it); the verdicts already given are kept.

Mutants listed in conformance/mutation/equivalent.txt are left out of the score. The
score per module is printed; reports/mutation/ gets results.json and survivors.txt
(module, line, operator, fingerprint and diff of each survivor). Exit status: 1 when a
mutant survives, 2 when the run could not judge (the baseline fails, a pytest error),
else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

from nnx_conformance.suite import IMPL_UNAVAILABLE

from .mutants import Outcome as SuiteOutcome
from .mutation_lines import LineMap, record_options, statement_line
from .mutation_sites import (
    Mutant,
    Site,
    UnmadeMutant,
    find_sites,
    make_mutant,
    module_path,
    read_equivalents,
    sample,
)

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path("reference") / "src" / "nnx_reference"
"""The reference package, relative to the tree (the repository, or a commit's snapshot)."""
SUITE = Path("conformance") / "src"
OWN_TESTS = Path("reference") / "tests"
SPEC_DIR = REPO / "docs_extracted"
EQUIVALENTS = REPO / "conformance" / "mutation" / "equivalent.txt"
OUT = REPO / "reports" / "mutation"
FOCUS_PLUGIN = "tools.mutation_focus"
MIN_TIMEOUT_S = 120.0
TEST_TIMEOUT_S = 600
"""The suite's per-test timeout in every run: a busy machine must not kill a mutant through a
slow test (the stage's timeout still bounds a mutant that hangs)."""
SERIAL_BELOW = 100
"""A run of fewer tests than this goes without pytest-xdist: starting its workers would cost more."""

Outcome = Literal["killed", "survived", "equivalent", "error"]


@dataclass(frozen=True)
class Run:
    """One pytest run on a copy: its exit status (None past the timeout), the time and the output."""

    returncode: int | None
    seconds: float
    output: str

    @property
    def failure(self) -> str | None:
        """The first failing test and what it says went wrong, as tools/mutants.py reads them."""
        read = SuiteOutcome("run", self.returncode or 0, self.seconds, self.output)
        if read.first_failure is None:
            return None
        return f"{read.first_failure}: {read.reason}" if read.reason else read.first_failure


@dataclass(frozen=True)
class Verdict:
    """What the suite made of one mutant: ``killed``, ``survived``, ``equivalent`` or ``error``."""

    module: str
    line: int
    operator: str
    fingerprint: str
    outcome: Outcome
    stage: str
    """Which run decided: ``covering``, ``focused``, ``suite`` (any with `` (timeout)``), ``uncovered``
    (no test runs the line), or ``-`` for an equivalent."""
    detail: str | None
    """The first failing test of a killed mutant and its error; the listed reason of an equivalent one."""
    seconds: float
    diff: str
    own_tests: bool | None = None
    """For a survivor: whether the reference's own tests kill it (a timeout kills); else None."""


def committed_tree(root: Path, commit: str) -> Path:
    """A commit's conformance/ and reference/ under ``root``, beside the generated spec pages."""
    root.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", commit, "conformance", "reference"], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    (root / SPEC_DIR.name).symlink_to(SPEC_DIR, target_is_directory=True)
    return root


def judge_env(tree: Path, copy_root: Path) -> dict[str, str]:
    """A judging run's environment: the copy, then the tree's suite, then this repository (for the
    ``tools`` package) first on the path; no compilation cache."""
    env = dict(os.environ)
    path = (str(copy_root), str(tree / SUITE), str(REPO), env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def run_suite(
    tree: Path,
    copy_root: Path,
    select: str | None,
    timeout: float | None,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Run:
    """The tree's suite, with ``options`` (a focus, a list of tests), against the copy at
    ``copy_root``, stopping at a failure."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "nnx_conformance",
        "--impl",
        PACKAGE.name,
        "--spec-dir",
        str(tree / SPEC_DIR.name),
        "-p",
        "no:cacheprovider",
        "-p",
        FOCUS_PLUGIN,
        "-q",
        "-x",
        "-rfE",
        f"--conformance-timeout={TEST_TIMEOUT_S}",
        *options,
    ]
    if select:
        command += ["-k", select]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            check=False,
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**judge_env(tree, copy_root), **(env or {})},
        )
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        return Run(None, time.perf_counter() - start, output)
    return Run(done.returncode, time.perf_counter() - start, done.stdout + done.stderr)


def run_own_tests(tree: Path, copy_root: Path, timeout: float) -> bool:
    """Whether the reference's own tests (the tree's ``reference/tests``) fail on the copy."""
    command = [sys.executable, "-m", "pytest", str(tree / OWN_TESTS), "-q", "-x", "-p", "no:cacheprovider"]
    try:
        done = subprocess.run(
            command,
            check=False,
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=judge_env(tree, copy_root),
        )
    except subprocess.TimeoutExpired:
        return True
    return done.returncode != 0


def fresh_copy(source: Path, root: Path, mutant: Mutant | None = None) -> Path:
    """A new copy of the package ``source`` under ``root`` (emptied first), with ``mutant`` applied."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(source, root / source.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if mutant is not None:
        (root / source.name / mutant.site.path.relative_to(source)).write_text(mutant.mutated)
    return root / source.name


def copies_are_imported(tree: Path, copy_root: Path) -> bool:
    """Whether a judging process imports the reference from the copy and the suite from the tree."""
    probe = f"import nnx_conformance, {PACKAGE.name}; print(nnx_conformance.__file__, {PACKAGE.name}.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=judge_env(tree, copy_root), capture_output=True, text=True, check=False
    )
    suite, _, reference = done.stdout.strip().partition(" ")
    return suite.startswith(str(tree / SUITE)) and reference.startswith(str(copy_root))


@dataclass(frozen=True)
class Judging:
    """What every judgement of a run shares: the suite's tree, the unmutated package, which tests
    ran each line, the ``-k`` subset and the timeout of one stage."""

    tree: Path
    source: Path
    lines: LineMap
    select: str | None
    timeout: float


def stages(mutant: Mutant, judging: Judging, scratch: Path) -> Iterator[tuple[str, list[str]]]:
    """The runs that judge ``mutant``, in order, each as its stage name and pytest options;
    none when no test runs its line."""
    site = mutant.site
    located = statement_line(mutant.source, site.line)
    module_file = str(site.path.relative_to(judging.source))
    covering = judging.lines.covering(module_file, located.first, located.last) if located.in_body else None
    if covering is None:
        yield "focused", [f"--mutation-focus={site.module}"]
        yield "suite", []
    elif covering:
        listed = scratch / "tests.txt"
        listed.write_text("\n".join(sorted(covering)) + "\n")
        serial = ["-p", "no:xdist"] if len(covering) < SERIAL_BELOW else []
        yield "covering", [f"--mutation-tests={listed}", *serial]  # one token: not taken for a path to collect


def judge(mutant: Mutant, judging: Judging, copy_root: Path) -> Verdict:
    """Run the stages of ``mutant`` on a fresh copy of the package holding it."""
    site = mutant.site
    try:  # a mutant that is no Python keeps the package from importing, whichever line it is on
        compile(mutant.mutated, str(site.path), "exec")
    except SyntaxError as error:
        return _verdict(mutant, "killed", "compile", f"the implementation does not import: {error.msg}", 0.0)
    fresh_copy(judging.source, copy_root, mutant)
    seconds, stage = 0.0, "uncovered"
    for stage, options in stages(mutant, judging, copy_root):
        run = run_suite(judging.tree, copy_root, judging.select, judging.timeout, options)
        seconds += run.seconds
        if run.returncode is None:
            return _verdict(mutant, "killed", f"{stage} (timeout)", None, seconds)
        if run.returncode == 1:
            return _verdict(mutant, "killed", stage, run.failure, seconds)
        if run.returncode == IMPL_UNAVAILABLE:
            return _verdict(mutant, "killed", stage, "the implementation does not import", seconds)
        if run.returncode not in (0, 5) or (run.returncode == 5 and stage == "covering"):
            # 5: no test was kept, which only a module's focus may do: the tests that ran a line must exist
            tail = "\n".join(run.output.splitlines()[-15:])
            print(f"error: pytest exited {run.returncode} on {site.module}:{site.line}:\n{tail}", file=sys.stderr)
            return _verdict(mutant, "error", stage, None, seconds)
    detail = "no test runs this line" if stage == "uncovered" else None
    own_tests = run_own_tests(judging.tree, copy_root, judging.timeout)
    return _verdict(mutant, "survived", stage, detail, seconds, own_tests)


def _verdict(
    mutant: Mutant, outcome: Outcome, stage: str, detail: str | None, seconds: float, own_tests: bool | None = None
) -> Verdict:
    site = mutant.site
    return Verdict(
        site.module,
        site.line,
        site.operator,
        mutant.fingerprint,
        outcome,
        stage,
        detail,
        round(seconds, 1),
        mutant.diff,
        own_tests,
    )


OWN_KILLED = "survived, killed by own tests"
"""The score tables' count of the survivors that the reference's own tests kill."""


def scores(verdicts: Sequence[Verdict]) -> dict[str, dict[str, int]]:
    """Counts of each outcome per module, and the ``total``; also how many survivors the
    reference's own tests kill."""
    table: dict[str, dict[str, int]] = {}
    for verdict in verdicts:
        for key in (verdict.module, "total"):
            row = table.setdefault(key, dict.fromkeys((*get_args(Outcome), OWN_KILLED), 0))
            row[verdict.outcome] += 1
            row[OWN_KILLED] += bool(verdict.own_tests)
    return dict(sorted(table.items(), key=lambda kv: (kv[0] == "total", kv[0])))


SCORE_HEADER = (
    f"{'module':<38} {'killed':>6} {'survived':>8} {'equivalent':>10} {'error':>5} {'score':>6} "
    f"{'own':>4} {'with own':>8}"
)
"""The score table's header: ``own`` counts the survivors the reference's own tests kill."""


def score_line(name: str, row: dict[str, int]) -> str:
    """One row of the score table; the score is killed / (killed + survived), by the suite
    alone and with the reference's own tests."""
    judged = row["killed"] + row["survived"]

    def percent(killed: int) -> str:
        return f"{100 * killed / judged:.0f}%" if judged else "-"

    return (
        f"{name:<38} {row['killed']:>6} {row['survived']:>8} {row['equivalent']:>10} "
        f"{row['error']:>5} {percent(row['killed']):>6} {row[OWN_KILLED]:>4} "
        f"{percent(row['killed'] + row[OWN_KILLED]):>8}"
    )


def write_reports(out: Path, verdicts: Sequence[Verdict], meta: dict[str, object]) -> Path:
    """results.json (every verdict, the scores, the run's parameters) and survivors.txt under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    results = {**meta, "scores": scores(verdicts), "mutants": [asdict(v) for v in verdicts]}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    survivors = [v for v in verdicts if v.outcome == "survived"]
    blocks = [
        f"{v.fingerprint}  {v.module}:{v.line} {v.operator}{'  (killed by own tests)' if v.own_tests else ''}"
        f"\n{v.diff}\n"
        for v in survivors
    ]
    path = out / "survivors.txt"
    path.write_text(
        f"# {len(survivors)} surviving mutants (fingerprint  module:line operator, then the diff)\n\n"
        + "\n".join(blocks)
    )
    return path


def survivors_of(results: Path, sites: Sequence[Site]) -> list[Site]:
    """The sites of ``sites`` whose mutants survived (or could not be judged) in a former run's
    ``results`` (results.json), found by fingerprint, so that edits elsewhere in their modules
    do not lose them."""
    survived = [m for m in json.loads(results.read_text())["mutants"] if m["outcome"] in ("survived", "error")]
    wanted = {m["fingerprint"] for m in survived}
    places = {(m["module"], m["operator"]) for m in survived}
    found = []
    for site in sites:
        if (site.module, site.operator) in places:
            mutant = make_mutant(site, site.path.read_text())
            if mutant is not None and mutant.fingerprint in wanted:
                found.append(site)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("--sample", type=int, metavar="N", help="judge N mutants drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's random seed (default 0)")
    parser.add_argument(
        "--per-module",
        type=int,
        default=0,
        metavar="M",
        help="draw M of the sample from each module first, so that every module has some",
    )
    parser.add_argument(
        "--module",
        action="append",
        metavar="DOTTED",
        help="mutate this module only (repeatable), e.g. nnx_reference.nn.linear",
    )
    parser.add_argument("-k", dest="select", metavar="EXPR", help="judge with the suite's -k EXPR subset only")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="judge N mutants at a time (default 1)")
    parser.add_argument(
        "--timeout-factor",
        type=float,
        default=3.0,
        help=f"a stage's timeout: this times the baseline's time, at least {MIN_TIMEOUT_S:.0f} s",
    )
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS, help="the equivalent mutants' file")
    parser.add_argument("--out", type=Path, default=OUT, help="where results.json and survivors.txt go")
    parser.add_argument(
        "--rejudge",
        type=Path,
        metavar="RESULTS",
        help="judge again the survivors (and errors) of a former run's results.json (the sample options are ignored)",
    )
    parser.add_argument(
        "--worktree", action="store_true", help="judge the work tree's suite and reference, not the last commit's"
    )
    parser.add_argument(
        "--commit", metavar="REV", help="judge this commit's suite and reference (default: the last commit)"
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="RESULTS",
        help="go on with the sample of a former run's results.json (its sample, seed, per-module draw "
        "and commit): its verdicts are kept, the mutants it had not judged are judged",
    )
    args = parser.parse_args(argv)
    if args.resume and args.rejudge:
        parser.error("--resume goes on with a sample and --rejudge judges survivors again: give one")
    former = json.loads(args.resume.read_text()) if args.resume else None
    if former is not None:
        args.sample, args.seed, args.per_module = former["sample"], former["seed"], former["per_module"]
        args.commit = args.commit or former.get("commit")
    commit = _resolved(args.commit or "HEAD")
    equivalents = read_equivalents(args.equivalents)
    started = time.perf_counter() - (former or {}).get("wall_s", 0.0)
    with tempfile.TemporaryDirectory(prefix="nnx-mutation-") as tmp:
        tree = REPO if args.worktree else committed_tree(Path(tmp) / "tree", commit)
        snapshot = fresh_copy(tree / PACKAGE, Path(tmp) / "snapshot")  # the source the whole run mutates
        try:
            paths = [module_path(snapshot, m) for m in args.module] if args.module else sorted(snapshot.rglob("*.py"))
        except ValueError as exc:
            parser.error(str(exc))
        sites = find_sites(snapshot, paths, Path(tmp) / "sites.sqlite")
        if args.rejudge:
            chosen = survivors_of(args.rejudge, sites)
            print(f"{len(chosen)} survivors of {args.rejudge} found among {len(sites)} mutants")
        else:
            chosen = sample(sites, args.sample, args.seed, args.per_module)
            random.Random(args.seed).shuffle(chosen)  # judged in random order: a stopped run is a sample too
            print(f"{len(chosen)} of {len(sites)} mutants (seed {args.seed}) in {len(paths)} modules")
        verdicts = [Verdict(**m) for m in former["mutants"]] if former is not None else []
        if verdicts:
            chosen = _not_judged(chosen, {v.fingerprint for v in verdicts})
            print(f"{len(verdicts)} judged by {args.resume}; {len(chosen)} to judge")
        copy_root = Path(tmp) / "copy"
        fresh_copy(snapshot, copy_root)
        if not copies_are_imported(tree, copy_root):
            print(
                "error: the judging process does not import the suite and the reference from their copies",
                file=sys.stderr,
            )
            return 2
        data_file = Path(tmp) / "lines.coverage"
        baseline = run_suite(
            tree, copy_root, args.select, None, record_options(PACKAGE.name), {"COVERAGE_FILE": str(data_file)}
        )
        print(
            f"baseline (unmutated copy, recording the lines each test runs): exit {baseline.returncode} "
            f"in {baseline.seconds:.0f}s"
        )
        if baseline.returncode != 0:
            print(
                "error: the suite fails on the unmutated reference:\n" + "\n".join(baseline.output.splitlines()[-20:]),
                file=sys.stderr,
            )
            return 2
        judging = Judging(
            tree,
            snapshot,
            LineMap.read(data_file, copy_root / PACKAGE.name),
            args.select,
            max(MIN_TIMEOUT_S, args.timeout_factor * baseline.seconds),
        )
        meta: dict[str, object] = {
            "sample": args.sample,
            "seed": args.seed,
            "per_module": args.per_module,
            "rejudged": str(args.rejudge or ""),
            "commit": "work tree" if args.worktree else commit,
            "sites": len(sites),
            "jobs": args.jobs,
            "modules": [str(p.relative_to(snapshot)) for p in paths],
            "baseline_s": round(baseline.seconds, 1),
        }
        meta["wall_s"] = round(time.perf_counter() - started, 1)
        survivors = write_reports(args.out, verdicts, meta)
        for verdict in _judge_all(chosen, equivalents, judging, Path(tmp) / "copies", args.jobs):
            verdicts.append(verdict)  # the reports are rewritten after each verdict: a stopped run keeps them
            meta["wall_s"] = round(time.perf_counter() - started, 1)
            survivors = write_reports(args.out, verdicts, meta)
    print(f"\n{SCORE_HEADER}")
    for name, row in scores(verdicts).items():
        print(score_line(name, row))
    print(f"\nwall time {meta['wall_s']}s; survivors: {survivors}")
    outcomes = {v.outcome for v in verdicts}
    return 1 if "survived" in outcomes else 2 if "error" in outcomes else 0


def _resolved(rev: str) -> str:
    """The commit ``rev`` names, in full."""
    return subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()


def _not_judged(sites: Sequence[Site], judged: set[str]) -> list[Site]:
    """The sites of ``sites`` whose mutant's fingerprint is not in ``judged``."""
    return [s for s in sites if (m := make_mutant(s, s.path.read_text())) is None or m.fingerprint not in judged]


def _judge_all(
    sites: Sequence[Site], equivalents: dict[str, str], judging: Judging, copies: Path, jobs: int
) -> Iterator[Verdict]:
    """The verdicts on ``sites``, ``jobs`` at a time, each on a copy of its own, as they come."""
    free = [copies / str(job) for job in range(jobs)]
    pending: dict[Future[Verdict], Path] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for site in sites:
            if not free:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    free.append(pending.pop(future))
                    yield from _finished(future)
            copy_root = free.pop()
            pending[pool.submit(_judge_site, site, equivalents, judging, copy_root)] = copy_root
        for future in pending:
            yield from _finished(future)


def _finished(future: Future[Verdict]) -> Iterator[Verdict]:
    """The printed verdict of a judged site; none where cosmic-ray could not make its mutant."""
    try:
        verdict = future.result()
    except UnmadeMutant as unmade:
        print(f"unmade     {unmade}", flush=True)
        return
    yield _printed(verdict)


def _judge_site(site: Site, equivalents: dict[str, str], judging: Judging, copy_root: Path) -> Verdict:
    """The verdict on one sampled site."""
    mutant = make_mutant(site, site.path.read_text())
    if mutant is None:
        raise RuntimeError(f"cosmic-ray no longer finds {site.operator} #{site.occurrence} in {site.module}")
    if mutant.fingerprint in equivalents:
        return _verdict(mutant, "equivalent", "-", equivalents[mutant.fingerprint], 0.0)
    return judge(mutant, judging, copy_root)


def _printed(verdict: Verdict) -> Verdict:
    print(
        f"{verdict.outcome:<10} {verdict.seconds:>6.1f}s  {verdict.module}:{verdict.line} "
        f"{verdict.operator} [{verdict.fingerprint}] {verdict.stage} {(verdict.detail or '')[:200]}"
        f"{' (killed by own tests)' if verdict.own_tests else ''}",
        flush=True,
    )
    return verdict


if __name__ == "__main__":
    sys.exit(main())
