"""Every entry point of the project.

    nox -s conformance [-- --impl MODULE ...pytest args]   the suite against one implementation, flax beside it
    nox -s tests                                           the harness's and reference's tests + both implementations
    nox -s extract [-- --check | --flax VERSION ...]       regenerate or check the spec pages
    nox -s compare -- BEFORE.json AFTER.json               regressions and fixes between two reports
    nox -s releases [-- VERSION ...]                       the pinned spec against several flax releases
    nox -s lint                                            ruff's checks and formatter over the code
    nox -s reach                                           the share of flax.nnx's lines and branches the suite drives

JAX 0.12 and flax 0.12.12 need Python >= 3.12, which need not be the Python that runs
nox: `find_python` looks for one on PATH, then in the usual install locations.

Each implementation is tested in a virtual environment of its own, kept under
`.nox/impl-<name>/`, with the pinned flax installed beside it: the differential tests
compare the implementation with flax.nnx there (flax under test is compared with itself).
`-- --yardstick none` (or NNX_YARDSTICK=none) leaves flax out, for an implementation that
cannot share a venv with it: the differential tests do not run, and the run is partial.
The reference has a venv with flax (`impl-both`) and one without (`impl-nnx_reference`),
in which `nox -s tests` proves that it stands alone.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import nox

FLAX_PIN = "0.12.12"
ROOT = Path(__file__).parent
CONSTRAINTS = ROOT / "constraints.txt"
REPORTS = ROOT / "reports"
SPEC_PAGES = ROOT / "docs_extracted" / "pages"
SPEC_MANIFEST = ROOT / "docs_extracted" / "manifest.json"
PARALLEL = ["-n", "auto"]
"""pytest-xdist on every core; the plugin gives each doc page to one worker."""
SERIAL_FLAGS = ("-n", "--numprocesses", "no:xdist")
SUITE_ENV = {"PYTHONDONTWRITEBYTECODE": ""}
"""Python caches the bytecode of what it imports, whatever the shell says: each worker of a run
(and of every later run) then imports the suite's modules, their asserts rewritten by pytest,
without compiling them again."""

nox.options.sessions = ["conformance"]


def _version_of(python: str) -> tuple[int, int] | None:
    """The (major, minor) version of an interpreter, or None if it does not run."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out[0]), int(out[1])


def _candidates() -> list[str]:
    """Interpreters to try, PATH first, then common install locations."""
    on_path = [shutil.which(f"python3.{minor}") for minor in range(12, 16)]
    on_path.append(shutil.which("python3"))
    home = Path.home()
    patterns = [
        (home / ".pyenv" / "versions", "3.1*/bin/python3"),
        (home / ".local" / "share" / "uv" / "python", "cpython-3.1*/bin/python3"),
        (Path("/opt/python"), "3.1*/bin/python3"),
        (Path("/usr/local/bin"), "python3.1*"),
        (Path("/usr/bin"), "python3.1*"),
    ]
    installed = [str(p) for base, glob in patterns if base.is_dir() for p in sorted(base.glob(glob))]
    return [p for p in on_path if p] + installed


def find_python() -> str | None:
    """The first Python >= 3.12 found, preferring the oldest such minor version.

    The oldest supported minor version is the one the constraints were made with.
    """
    found = [(v, p) for p in _candidates() if (v := _version_of(p)) and v >= (3, 12)]
    return min(found, key=lambda vp: vp[0])[1] if found else None


PYTHON = os.environ.get("NNX_PYTHON") or find_python()


def _venv(session: nox.Session, venv: Path) -> Path:
    """The python of the venv at `venv`, made from PYTHON with a current pip if it is not there yet."""
    python = venv / "bin" / "python"
    if not python.exists():
        session.run(PYTHON, "-m", "venv", str(venv), external=True)
        session.run(str(python), "-m", "pip", "install", "-q", "--upgrade", "pip", external=True)
    return python


def _impl_venv(session: nox.Session, name: str, requirements: list[str]) -> Path:
    """A venv under .nox/impl-<name> with the suite and `requirements` installed."""
    if PYTHON is None:
        session.error(
            "No Python >= 3.12 was found on PATH or under ~/.pyenv/versions, uv, /opt/python,"
            " /usr/local/bin or /usr/bin; install one, or point NNX_PYTHON at it."
        )
    python = _venv(session, ROOT / ".nox" / f"impl-{name}")
    session.run(
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "-c",
        str(CONSTRAINTS),
        "-e",
        str(ROOT / "conformance"),
        *requirements,
        external=True,
    )
    return python


def _reference_venv(session: nox.Session) -> Path:
    """The venv of nnx_reference: no flax in it."""
    return _impl_venv(session, "nnx_reference", ["-e", str(ROOT / "reference")])


def _flax_venv(session: nox.Session, version: str = FLAX_PIN) -> Path:
    """The venv of flax.nnx at `version`."""
    return _impl_venv(session, f"flax-{version}", [f"flax=={version}"])


def _ensure_spec(session: nox.Session, python: Path) -> None:
    """Generate the spec pages if they are missing, without touching the committed manifest.

    The pages are generated into a scratch folder; they are moved into docs_extracted/
    only when the manifest generated with them equals the committed one (the plugin then
    checks every page against it). `nox -s extract` is how the manifest changes.
    """
    if SPEC_PAGES.is_dir():
        return
    scratch = Path(tempfile.mkdtemp(prefix="nnx-spec-"))
    try:
        session.run(str(python), "-m", "tools.extract_docs", "--out", str(scratch), external=True)
        generated = json.loads((scratch / "manifest.json").read_text(encoding="utf-8"))
        if generated != json.loads(SPEC_MANIFEST.read_text(encoding="utf-8")):
            session.error(
                f"The pages generated from flax {FLAX_PIN} do not match the committed {SPEC_MANIFEST.relative_to(ROOT)}"
                f" (python -m tools.manifest_diff {SPEC_MANIFEST.relative_to(ROOT)} {scratch / 'manifest.json'} "
                f"says how);"
                " to regenerate the spec on purpose: nox -s extract"
            )
        shutil.move(str(scratch / "pages"), str(SPEC_PAGES))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _split_impl(args: list[str]) -> tuple[str, list[str]]:
    """The --impl value in pytest arguments (default NNX_IMPL or nnx_reference), and the rest."""
    impl = os.environ.get("NNX_IMPL", "nnx_reference")
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--impl":
            impl = next(it, impl)
        elif arg.startswith("--impl="):
            impl = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return impl, rest


def _with_flax(args: list[str]) -> bool:
    """Whether the run compares with flax, which is then installed beside the implementation:
    not when the pytest arguments (or NNX_YARDSTICK) say `--yardstick none`."""
    chosen = os.environ.get("NNX_YARDSTICK", "flax")
    for arg, following in zip(args, [*args[1:], ""]):
        if arg == "--yardstick":
            chosen = following
        elif arg.startswith("--yardstick="):
            chosen = arg.split("=", 1)[1]
    return chosen != "none"


def _third_party(session: nox.Session, impl: str) -> list[str]:
    """The pip requirement of a third-party implementation, from NNX_INSTALL (e.g. `-e ../mylib`)."""
    install = os.environ.get("NNX_INSTALL")
    if not install:
        session.error(
            f"To test {impl}, say how to install it: NNX_INSTALL='-e path/to/pkg' nox -s conformance -- --impl {impl}"
        )
    return shlex.split(install)


def _venv_for(session: nox.Session, impl: str, with_flax: bool) -> Path:
    """The venv that can import `impl`, with the pinned flax beside it when `with_flax`:
    flax's, one of the reference's two, or one for a third-party module (NNX_INSTALL)."""
    top = impl.split(".")[0]
    if top == "flax":
        return _flax_venv(session)
    if top == "nnx_reference":
        return _both_venv(session) if with_flax else _reference_venv(session)
    return _impl_venv(session, top, [*_third_party(session, impl), *([f"flax=={FLAX_PIN}"] if with_flax else [])])


def _run_suite(
    session: nox.Session,
    python: Path,
    impl: str,
    args: list[str],
    label: str | None = None,
    env: dict[str, str] | None = None,
) -> Path:
    """Run the conformance suite against `impl`, writing reports/<label or impl>/conformance.{json,md}; returns the
    JSON report's path."""
    _ensure_spec(session, python)
    report = REPORTS / (label or impl) / "conformance.json"
    chosen = any(arg.startswith(SERIAL_FLAGS) for arg in args)
    session.run(
        str(python),
        "-m",
        "pytest",
        "--pyargs",
        "nnx_conformance",
        "--impl",
        impl,
        f"--spec-dir={ROOT / 'docs_extracted'}",
        f"--conformance-report={report}",
        "-p",
        "no:cacheprovider",
        *([] if chosen else PARALLEL),
        *args,
        external=True,
        env={**SUITE_ENV, **(env or {})},
    )
    session.log(f"report: {report} and {report.with_suffix('.md')}")
    return report


def _jax_pin() -> str:
    """The jax version constraints.txt pins."""
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line.startswith("jax=="):
            return line.removeprefix("jax==")
    raise ValueError(f"{CONSTRAINTS} pins no jax")


def _wants_gpu(args: list[str]) -> bool:
    return "--device=gpu" in args or any(a == "--device" and b == "gpu" for a, b in itertools.pairwise(args))


def _gpu_venv(session: nox.Session, impl: str, with_flax: bool) -> Path:
    """A copy of an implementation's venv set-up with jax's CUDA build of the pinned jax.

    Stops with one sentence when the machine has no NVIDIA GPU.
    """
    if shutil.which("nvidia-smi") is None or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        session.error("--device gpu needs an NVIDIA GPU with its driver (nvidia-smi), and this machine has none")
    top = impl.split(".")[0]
    requirements = {"flax": [], "nnx_reference": ["-e", str(ROOT / "reference")]}
    extra = requirements[top] if top in requirements else _third_party(session, impl)
    flax = [f"flax=={FLAX_PIN}"] if with_flax or top == "flax" else []
    python = _impl_venv(session, f"{top}-gpu", [*extra, *flax, f"jax[cuda12]=={_jax_pin()}"])
    session.run(str(python), "-c", "import jax; jax.devices('gpu')", external=True)
    return python


@nox.session(venv_backend="none")
def conformance(session: nox.Session) -> None:
    """The suite against one implementation (default nnx_reference), flax beside it, ending with a per-area table.

    `-- --yardstick none` leaves flax out (the differential tests do not run);
    `-- --device gpu` runs it on the GPU, in a venv with jax's CUDA build.
    """
    impl, args = _split_impl(list(session.posargs))
    with_flax = _with_flax(args)
    python = _gpu_venv(session, impl, with_flax) if _wants_gpu(args) else _venv_for(session, impl, with_flax)
    _run_suite(session, python, impl, args or ["-q"])


@nox.session(venv_backend="none")
def compare(session: nox.Session) -> None:
    """What regressed and what was fixed between two JSON reports, as Markdown; fails on a regression."""
    if len(session.posargs) != 2:
        session.error("Name the two reports: nox -s compare -- BEFORE.json AFTER.json")
    python = _reference_venv(session)
    session.run(str(python), "-m", "nnx_conformance.compare", *session.posargs, external=True)


FIRST_RELEASE = (0, 12, 8)
"""The oldest flax release the release matrix runs by default: the pin's series from the first with jax >= 0.10."""
RELEASES = REPORTS / "releases"


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _flax_releases(session: nox.Session) -> list[str]:
    """The flax releases of the pin's series from FIRST_RELEASE on that pip offers this Python."""
    out = session.run(PYTHON, "-m", "pip", "index", "versions", "flax", external=True, silent=True) or ""
    listed = [v.strip() for v in out.split("Available versions:", 1)[-1].split(",")]
    pinned_series = _release_key(FLAX_PIN)[:2]
    found = [v for v in listed if v.replace(".", "").isdigit() and _release_key(v)[:2] == pinned_series]
    return sorted((v for v in found if _release_key(v) >= FIRST_RELEASE), key=_release_key)


def _uploaded_by(version: str) -> str:
    """A day after flax `version` reached PyPI (ISO 8601): its dependencies are taken as of then."""
    request = urllib.request.Request(
        "https://pypi.org/simple/flax/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    prefixes = (f"flax-{version}-", f"flax-{version}.tar.gz")
    uploaded = min(f["upload-time"] for f in files if f["filename"].startswith(prefixes))
    return (datetime.fromisoformat(uploaded) + timedelta(days=1)).isoformat()


def _release_venv(session: nox.Session, version: str) -> Path:
    """A venv with flax `version` and the packages of its time; the suite installed without its dependencies."""
    python = _venv(session, ROOT / ".nox" / f"release-{version}")
    session.run(
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "--uploaded-prior-to",
        _uploaded_by(version),
        f"flax=={version}",
        "pytest",
        "hypothesis",
        "sybil",
        "rich",
        "pytest-xdist",
        "pytest-timeout",
        "orbax-checkpoint",
        "treescope",
        external=True,
    )
    session.run(str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT / "conformance"), external=True)
    return python


@nox.session(venv_backend="none")
def releases(session: nox.Session) -> None:
    """The pinned spec's examples against several flax releases: a release x area matrix.

    `nox -s releases -- 0.12.8 0.12.10 0.12.12`; by default, every release of the pin's
    series from 0.12.8 on that pip offers this Python. Each runs in a venv of its own with
    the packages of its time; a release that does not install gets a note in the matrix.
    """
    versions = list(session.posargs) or _flax_releases(session)
    spec_python = _reference_venv(session)
    _ensure_spec(session, spec_python)
    for version in versions:
        folder = RELEASES / version
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            python = _release_venv(session, version)
        except nox.command.CommandFailed as failure:
            (folder / "install-failure.txt").write_text(f"flax {version} does not install here: {failure.reason}\n")
            continue
        session.run(
            str(python),
            "-m",
            "pytest",
            "--pyargs",
            "nnx_conformance.spec.test_docs",
            "--impl",
            "flax.nnx",
            f"--spec-dir={ROOT / 'docs_extracted'}",
            "--expectations=/dev/null",
            f"--conformance-report={folder / 'conformance.json'}",
            "-p",
            "no:cacheprovider",
            "-q",
            *PARALLEL,
            external=True,
            success_codes=[0, 1],
        )
    session.run(str(spec_python), "-m", "nnx_conformance.release_matrix", str(RELEASES), external=True)


REACH = REPORTS / "reach"
REACH_DATA = REACH / ".coverage"
REACH_FLOOR = ROOT / "tools" / "reach_floor.json"
"""The committed reach figures (lines and branches, percent) that a run must not drop below."""


def _reach_options(session: nox.Session, python: Path) -> list[str]:
    """pytest options that run the suite under coverage.py with branch coverage, limited to the
    flax/nnx of the venv of `python` (by path: naming the package would import flax before the plugin)."""
    group = f"{ROOT / 'conformance' / 'pyproject.toml'}:reach"
    session.run(str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), "--group", group, external=True)
    where = (
        "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('flax').origin).parent / 'nnx')"
    )
    package = (session.run(str(python), "-c", where, external=True, silent=True) or "").strip()  # flax not imported
    return [
        f"--cov={package}",
        "--cov-branch",
        "--cov-report=",
        f"--cov-config={ROOT / 'tools' / 'reach_coverage.toml'}",
    ]


def _run_flax_with_reach(session: nox.Session, args: list[str], *, ratchet: bool = True) -> None:
    """The suite against flax.nnx (the differential tests comparing it with itself) under coverage,
    then reach: per module in the log, unreached lines and branches in reports/reach/, the totals
    in the JSON report, and with `ratchet`, a failure when reach drops below REACH_FLOOR.

    `nox -s tests` runs its flax.nnx run through this, so CI gets reach from a run it makes anyway.
    """
    python = _flax_venv(session)
    options = _reach_options(session, python)
    REACH.mkdir(parents=True, exist_ok=True)
    for stale in REACH.glob(".coverage*"):
        stale.unlink()
    report = _run_suite(session, python, "flax.nnx", [*options, *args], env={"COVERAGE_FILE": str(REACH_DATA)})
    floor = ["--floor", str(REACH_FLOOR)] if ratchet else []
    session.run(
        str(python),
        "-m",
        "tools.reach",
        str(REACH_DATA),
        "--out",
        str(REACH),
        "--report",
        str(report),
        *floor,
        external=True,
    )


@nox.session(venv_backend="none")
def reach(session: nox.Session) -> None:
    """The share of flax.nnx's lines and branches (less tools/reach_exclusions.txt) the suite drives.

    The whole suite against flax.nnx under coverage.py; `nox -s reach -- -k rnglib` measures a part
    (without the ratchet, which holds for the whole suite alone).
    """
    _run_flax_with_reach(session, ["-q", *session.posargs], ratchet=not session.posargs)


@nox.session(venv_backend="none")
def extract(session: nox.Session) -> None:
    """Generate the spec pages from the pinned flax sdist, or `-- --check` them against the manifest."""
    python = _reference_venv(session)
    session.run(str(python), "-m", "tools.extract_docs", *session.posargs, external=True)


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The harness's and the reference's own tests, the spec check, the suite against flax and the reference.

    The run against flax is measured for reach, which must not drop below tools/reach_floor.json.
    The reference's run is in two parts, nothing run twice: every test that needs no flax in
    the venv without it, which proves the reference stands alone (with a check that importing
    it imports no flax), and the tests that compare with flax in the venv with both.
    """
    reference = _reference_venv(session)
    _install_mutation_tool(session, reference)  # the harness runs tools/mutation.py end to end
    _ensure_spec(session, reference)  # some harness tests run the suite on the repository's pages
    session.run(
        str(reference),
        "-m",
        "pytest",
        str(ROOT / "conformance" / "tests"),
        "-q",
        "-p",
        "no:cacheprovider",
        external=True,
    )
    session.run(
        str(reference), "-m", "pytest", str(ROOT / "reference" / "tests"), "-q", "-p", "no:cacheprovider", external=True
    )
    session.run(str(reference), "-m", "tools.extract_docs", "--check", external=True)
    _run_flax_with_reach(session, ["-q", *session.posargs], ratchet=not session.posargs)
    _run_suite(session, reference, "nnx_reference", ["-q", "--yardstick", "none", *session.posargs])
    _check_reference_alone(session, _both_venv(session))
    _run_differential(session, ["-q", *session.posargs])


FLAX_IMPORTED = (
    "import sys, nnx_reference; found = sorted(m for m in sys.modules if m.split('.')[0] == 'flax');"
    " sys.exit(f'importing nnx_reference imports {found}' if found else 0)"
)
"""Fails, naming them, when importing nnx_reference imports flax modules."""


def _check_reference_alone(session: nox.Session, python: Path) -> None:
    """Importing nnx_reference imports no flax module, in a venv where flax could be imported."""
    session.run(str(python), "-c", FLAX_IMPORTED, external=True)


def _both_venv(session: nox.Session) -> Path:
    """A venv with flax.nnx and nnx_reference side by side, for comparisons between the two."""
    return _impl_venv(session, "both", [f"flax=={FLAX_PIN}", "-e", str(ROOT / "reference")])


def _run_differential(session: nox.Session, args: list[str]) -> None:
    """The tests that compare with flax: the reference against flax.nnx, side by side in one venv."""
    _run_suite(session, _both_venv(session), "nnx_reference", ["--yardstick", "only", *args], label="differential")


@nox.session(venv_backend="none")
def parity(session: nox.Session) -> None:
    """The tests that compare with flax alone: the reference against flax.nnx, same calls, in one venv with both."""
    _run_differential(session, list(session.posargs) or ["-q"])


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Overhead of both implementations (and of Equinox, installed for this alone) next to raw jax.jit, one run."""
    python = _both_venv(session)
    session.run(str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), "equinox", external=True)
    session.run(str(python), "-m", "tools.bench", *session.posargs, external=True, env={"JAX_PLATFORMS": "cpu"})


@nox.session(venv_backend="none")
def mutants(session: nox.Session) -> None:
    """Deliberately broken copies of the reference: the suite must fail on each."""
    python = _reference_venv(session)
    _ensure_spec(session, python)
    session.run(str(python), "-m", "tools.mutants", *session.posargs, external=True)


def _install_mutation_tool(session: nox.Session, python: Path) -> None:
    """cosmic-ray (the conformance package's `mutation` dependency group) into the venv of `python`."""
    group = f"{ROOT / 'conformance' / 'pyproject.toml'}:mutation"
    session.run(str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), "--group", group, external=True)


@nox.session(venv_backend="none")
def mutation(session: nox.Session) -> None:
    """cosmic-ray's mutants of the reference, judged by the whole suite, differential tests included.

    `nox -s mutation -- --sample 40 --seed 0 [--module nnx_reference.nn.linear]`: see tools/mutation.py.
    """
    python = _both_venv(session)
    _install_mutation_tool(session, python)
    _ensure_spec(session, python)
    session.run(str(python), "-m", "tools.mutation", *session.posargs, external=True)


@nox.session(venv_backend="none")
def api(session: nox.Session) -> None:
    """The reference's public surface (names, kinds, signatures) diffed against the pinned flax's."""
    python = _reference_venv(session)
    surface = REPORTS / "nnx_reference" / "api.json"
    surface.parent.mkdir(parents=True, exist_ok=True)
    flax_surface = ROOT / "conformance" / "src" / "nnx_conformance" / "data" / "flax_api.json"
    session.run(str(python), "-m", "tools.api_surface", "dump", "nnx_reference", "-o", str(surface), external=True)
    session.run(str(python), "-m", "tools.api_surface", "diff", str(flax_surface), str(surface), external=True)


LINTED = ["conformance", "reference", "tools", "noxfile.py"]
"""What ruff checks and formats (its settings: the root pyproject.toml)."""


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff's lint rules and its formatter's check over the code, in a venv of their own (.nox/lint)."""
    python = _venv(session, ROOT / ".nox" / "lint")
    session.run(str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), "ruff", external=True)
    session.run(str(python), "-m", "ruff", "check", *LINTED, external=True)
    session.run(str(python), "-m", "ruff", "format", "--check", *LINTED, external=True)
