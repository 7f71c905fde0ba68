"""The suite's command-line options, their defaults, and whether a run is the suite."""

from __future__ import annotations

import argparse
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import expectations
from .devices import PLATFORMS
from .graph_modes import CHOICES, DEFAULT, GraphMode
from .items import DOCS_MODULE, KINDS, SPEC_ROOT, UNMARKED_KIND
from .manifest import MANIFEST

DEFAULT_IMPL = "nnx_reference"
YARDSTICKS = ("flax", "none", "only")
"""What the tests that compare with flax.nnx do: run beside the rest, not run (the run is
partial), or run alone (the rest is deselected)."""
DEFAULT_TIMEOUT = 120.0
"""Seconds a suite test may take: the slowest honest test takes about 18 s on 2 shared cores."""
PACKAGE_DIR = SPEC_ROOT.parent


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nnx-conformance", "NNX conformance suite")
    group.addoption(
        "--impl",
        metavar="MODULE",
        default=None,
        help=f"the NNX implementation under test (env NNX_IMPL; default {DEFAULT_IMPL})",
    )
    group.addoption(
        "--spec-dir",
        metavar="DIR",
        default=None,
        help="the generated docs_extracted folder (env NNX_SPEC_DIR; default: found from rootdir/cwd)",
    )
    group.addoption(
        "--expectations",
        metavar="FILE",
        default=None,
        help="strict-xfail list (default: conformance/expectations/{flax,reference}.txt)",
    )
    group.addoption(
        "--spec-defects",
        choices=("skip", "run"),
        default="skip",
        help="skip (default) or run the doc examples listed in spec_defects.txt",
    )
    group.addoption(
        "--graph-mode",
        choices=CHOICES,
        default=DEFAULT.value,
        help=f"the global mode set before every page and test (default {DEFAULT.value}, the release's)",
    )
    group.addoption("--device", choices=PLATFORMS, default=None, help="the JAX platform to run on")
    group.addoption(
        "--conformance-report",
        metavar="PATH",
        default=None,
        help="write a JSON report there, and its Markdown rendering next to it (.md)",
    )
    group.addoption(
        "--kinds",
        metavar="KIND[,KIND...]",
        type=_kinds,
        default=None,
        help=f"run only the suite's tests of these kinds ({', '.join(('doc', *KINDS, UNMARKED_KIND))})",
    )
    group.addoption(
        "--yardstick",
        choices=YARDSTICKS,
        default=None,
        help="flax (default): the tests that compare with the real flax.nnx, installed beside the "
        "implementation, run with the rest; none: they do not run, and the run is partial; "
        "only: they alone run (env NNX_YARDSTICK)",
    )
    group.addoption(
        "--conformance-timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"fail a suite test that runs longer (default {DEFAULT_TIMEOUT:g}; 0: no limit)",
    )


def _kinds(value: str) -> frozenset[str]:
    """The kinds a ``--kinds`` value names; an unknown kind is a usage error."""
    known = ("doc", *KINDS, UNMARKED_KIND)
    named = frozenset(part.strip() for part in value.split(",") if part.strip())
    unknown = sorted(named - set(known))
    if unknown or not named:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'nothing'}: the kinds are {', '.join(known)}")
    return named


def _search_roots(config: pytest.Config) -> list[Path]:
    return [config.rootpath, config.invocation_params.dir, PACKAGE_DIR]


def _arg_path(config: pytest.Config, arg: str) -> Path | None:
    name = arg.split("::")[0]
    if config.option.pyargs:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin not in (None, "namespace"):
            origin = Path(spec.origin)
            return origin.parent if origin.name == "__init__.py" else origin
    path = config.invocation_params.dir / name
    return path.resolve() if path.exists() else None


def _requested(config: pytest.Config, target: Path) -> bool:
    for arg in config.args:
        path = _arg_path(config, arg)
        if path is not None and (path.is_relative_to(target) or target.is_relative_to(path)):
            return True
    return False


def suite_requested(config: pytest.Config) -> bool:
    """Whether the run collects (part of) the suite in ``nnx_conformance/spec``."""
    return _requested(config, SPEC_ROOT)


def docs_requested(config: pytest.Config) -> bool:
    """Whether the run collects the doc examples (``spec/test_docs.py``)."""
    return _requested(config, DOCS_MODULE)


@dataclass(frozen=True)
class Settings:
    """The options of a suite run, defaults resolved."""

    impl: str
    spec_dir: Path | None
    expectations: Path | None
    spec_defects: Path | None
    graph_mode: GraphMode
    baseline: Path | None  # flax's own expectations in this mode, when another implementation is under test
    run_defects: bool
    device: str | None
    report: Path | None
    timeout: float
    kinds: frozenset[str] | None
    yardstick: str  # one of YARDSTICKS

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        option = config.option
        impl = option.impl or os.environ.get("NNX_IMPL") or DEFAULT_IMPL
        roots = _search_roots(config)
        given = option.spec_dir or os.environ.get("NNX_SPEC_DIR")
        found = _find_upwards(roots, Path("docs_extracted") / MANIFEST)
        spec_dir = Path(given).resolve() if given else (found.parent if found else None)
        expected = option.expectations
        graph_mode = GraphMode(option.graph_mode)
        return cls(
            impl=impl,
            spec_dir=spec_dir,
            expectations=Path(expected) if expected else _expectations_file(impl, graph_mode, roots),
            # The spec's defects live with the spec: <repo>/conformance next to <repo>/docs_extracted.
            spec_defects=_find_upwards(
                [spec_dir.parent] if spec_dir else roots, Path("conformance") / "spec_defects.txt"
            ),
            graph_mode=graph_mode,
            baseline=_baseline(impl, graph_mode, roots),
            run_defects=option.spec_defects == "run",
            device=option.device,
            report=Path(option.conformance_report) if option.conformance_report else None,
            timeout=option.conformance_timeout,
            kinds=option.kinds,
            yardstick=_yardstick(option.yardstick),
        )


def _yardstick(given: str | None) -> str:
    """The ``--yardstick`` of a run: the option, else NNX_YARDSTICK, else flax."""
    chosen = given or os.environ.get("NNX_YARDSTICK") or "flax"
    if chosen not in YARDSTICKS:
        raise pytest.UsageError(f"NNX_YARDSTICK={chosen}: the yardsticks are {', '.join(YARDSTICKS)}")
    return chosen


def _find_upwards(roots: list[Path], relative: Path) -> Path | None:
    for root in roots:
        for base in (root, *root.parents):
            if (base / relative).is_file():
                return base / relative
    return None


def _expectations_file(impl: str, mode: GraphMode, roots: list[Path]) -> Path | None:
    name = expectations.default_file(impl, mode)
    return None if name is None else _find_upwards(roots, Path("conformance") / "expectations" / name)


def _baseline(impl: str, mode: GraphMode, roots: list[Path]) -> Path | None:
    """flax's expectations file in ``mode`` (found like the expectations files), which decides
    what counts against another implementation."""
    name = expectations.baseline_file(impl, mode)
    if name is None:
        return None
    found = _find_upwards(roots, Path("conformance") / "expectations" / name)
    if found is None:
        raise pytest.UsageError(
            f"--graph-mode {mode.value} needs flax's outcomes in that mode, "
            f"conformance/expectations/{name}, found in or above the rootdir, the working directory "
            "or the installed plugin"
        )
    return found
