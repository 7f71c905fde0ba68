"""Reach: the share of flax.nnx's lines and branches that the suite drives.

The suite runs against flax.nnx under coverage.py (through pytest-cov, with branches and
``tools/reach_coverage.toml``: ``nox -s reach``); this module reads the data it leaves, drops what
``tools/reach_exclusions.txt`` excludes (each entry with its reason), and reports:

- per module, lines and branches reached (printed);
- ``reports/reach/unreached.txt``: every unreached line and branch, with its source line;
- ``reports/reach/reach.json``: the totals and the per-module figures, also added under
  ``reach`` to the suite's JSON report when one is named;
- with ``--floor``, a ratchet: it fails when reach drops below the committed figures of
  ``tools/reach_floor.json``.

    python -m tools.reach [DATA_FILE ...] [--report conformance.json] [--floor tools/reach_floor.json]

Several data files (runs of parts of the suite) are combined.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import coverage

HERE = Path(__file__).parent
EXCLUSIONS = HERE / "reach_exclusions.txt"
FLOOR = HERE / "reach_floor.json"
CONFIG = HERE / "reach_coverage.toml"
OUT = HERE.parent / "reports" / "reach"


@dataclass(frozen=True)
class Exclusion:
    """A part of flax/nnx that no public call reaches, with the reason: a file (a folder, with a
    trailing /), a function or class of it (``file.py::Name.method``), or lines of it
    (``file.py:40`` or ``file.py:40-45``: a branch no call takes; the branches into them go too)."""

    path: str
    symbol: str | None
    reason: str
    lines: range | None = None


_LINES = re.compile(r"(?P<path>.+\.py):(?P<first>\d+)(?:-(?P<last>\d+))?")
"""An exclusion of lines: ``file.py:FIRST[-LAST]``."""


def read_exclusions(path: Path = EXCLUSIONS) -> list[Exclusion]:
    """The entries of the exclusions file: ``path[::symbol | :first[-last]]  # reason``, one a line."""
    entries = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        target, _, reason = line.partition("#")
        if not reason.strip():
            raise ValueError(f"{path}:{number}: the exclusion {target.strip()!r} gives no reason")
        lines = _LINES.fullmatch(target.strip())
        if lines:
            first = int(lines["first"])
            span = range(first, int(lines["last"] or first) + 1)
            entries.append(Exclusion(lines["path"], None, reason.strip(), span))
            continue
        file, _, symbol = target.strip().partition("::")
        entries.append(Exclusion(file, symbol or None, reason.strip()))
    return entries


def _symbol_lines(source: str, symbol: str) -> range:
    """The lines of the function or class ``symbol`` (dotted through classes) of a module."""
    body: Sequence[ast.stmt] = ast.parse(source).body
    node: ast.stmt | None = None
    for part in symbol.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == part
            ),
            None,
        )
        if node is None:
            raise ValueError(f"no {symbol} defined in the module")
        body = node.body
    assert node is not None and node.end_lineno is not None
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return range(first, node.end_lineno + 1)


@dataclass
class ModuleReach:
    """One module's reach: statements and branches (arcs from a line with two exits or more)."""

    module: str
    path: Path
    lines: int = 0
    lines_reached: int = 0
    branches: int = 0
    branches_reached: int = 0
    unreached_lines: list[int] = field(default_factory=list)
    unreached_branches: list[tuple[int, int]] = field(default_factory=list)


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 100.0


def _excluded(module: str, source: str, exclusions: Iterable[Exclusion]) -> set[int] | None:
    """The lines of ``module`` that the exclusions drop; None when the whole module goes."""
    lines: set[int] = set()
    for entry in exclusions:
        whole = entry.path == module or (entry.path.endswith("/") and module.startswith(entry.path))
        if whole and entry.symbol is None and entry.lines is None:
            return None
        if entry.path == module and entry.symbol:
            lines.update(_symbol_lines(source, entry.symbol))
        if entry.path == module and entry.lines:
            lines.update(entry.lines)
    return lines


def module_name(path: Path) -> str:
    """A measured file's name under flax/nnx (``transforms/compilation.py``)."""
    parts = path.parts
    start = next(i for i in range(len(parts) - 1, 0, -1) if parts[i - 1 : i + 1] == ("flax", "nnx"))
    return "/".join(parts[start + 1 :])


def measure(data_files: Sequence[Path], exclusions: Sequence[Exclusion]) -> list[ModuleReach]:
    """Per module of flax/nnx, its reach in the combined ``data_files``, less the exclusions."""
    with tempfile.TemporaryDirectory() as tmp:
        combined = Path(tmp) / "combined"
        cov = coverage.Coverage(data_file=str(combined), config_file=str(CONFIG))
        cov.combine([str(f) for f in data_files], keep=True)
        cov.load()
        listing = Path(tmp) / "coverage.json"
        cov.json_report(outfile=str(listing), ignore_errors=True)
        files = json.loads(listing.read_text())["files"]
    measured = []
    for filename, data in files.items():
        path = Path(filename)
        module = module_name(path)
        source = path.read_text(encoding="utf-8")
        dropped = _excluded(module, source, exclusions)
        if dropped is None:
            continue
        executed = set(data["executed_lines"]) - dropped
        missing = set(data["missing_lines"]) - dropped
        hit = [tuple(a) for a in data["executed_branches"] if not dropped.intersection(a)]
        missed = [tuple(a) for a in data["missing_branches"] if not dropped.intersection(a)]
        measured.append(
            ModuleReach(
                module,
                path,
                len(executed) + len(missing),
                len(executed),
                len(hit) + len(missed),
                len(hit),
                sorted(missing),
                sorted(missed),
            )
        )
    return sorted(measured, key=lambda m: m.module)


@dataclass(frozen=True)
class Totals:
    """The figures the ratchet keeps: lines and branches reached, in percent and counts."""

    lines_percent: float
    branches_percent: float
    lines: int
    lines_reached: int
    branches: int
    branches_reached: int


def totals(modules: Sequence[ModuleReach]) -> Totals:
    lines, reached = sum(m.lines for m in modules), sum(m.lines_reached for m in modules)
    branches, branches_reached = sum(m.branches for m in modules), sum(m.branches_reached for m in modules)
    return Totals(
        _percent(reached, lines), _percent(branches_reached, branches), lines, reached, branches, branches_reached
    )


def table(modules: Sequence[ModuleReach]) -> list[str]:
    """The per-module table, least reached first, then the totals."""
    rows = [f"{'module':<40} {'lines':>17} {'branches':>17}"]
    for m in sorted(modules, key=lambda m: (m.lines_reached - m.lines, m.module)):
        rows.append(
            f"{m.module:<40} {m.lines_reached:>5}/{m.lines:<5} {_percent(m.lines_reached, m.lines):5.1f}%"
            f" {m.branches_reached:>5}/{m.branches:<5} {_percent(m.branches_reached, m.branches):5.1f}%"
        )
    t = totals(modules)
    rows.append(
        f"{'total':<40} {t.lines_reached:>5}/{t.lines:<5} {t.lines_percent:5.1f}%"
        f" {t.branches_reached:>5}/{t.branches:<5} {t.branches_percent:5.1f}%"
    )
    return rows


def unreached(modules: Sequence[ModuleReach]) -> list[str]:
    """Every unreached line (``file:line: source``) and branch (``file:line->target: source``;
    a negative target leaves the function), module by module."""
    out = []
    for m in modules:
        source = m.path.read_text(encoding="utf-8").splitlines()
        for line in m.unreached_lines:
            out.append(f"{m.module}:{line}: {source[line - 1].strip()}")
        for start, end in m.unreached_branches:
            out.append(f"{m.module}:{start}->{end}: {source[start - 1].strip()}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "data",
        nargs="*",
        type=Path,
        default=[Path(".coverage")],
        help="coverage data files of suite runs against flax.nnx (combined)",
    )
    parser.add_argument("--exclusions", type=Path, default=EXCLUSIONS)
    parser.add_argument("--out", type=Path, default=OUT, help="where unreached.txt and reach.json go")
    parser.add_argument("--report", type=Path, help="the suite's JSON report, to add the totals to")
    parser.add_argument("--floor", type=Path, help="fail when reach is below this file's figures (the ratchet)")
    args = parser.parse_args(argv)
    modules = measure(args.data, read_exclusions(args.exclusions))
    if not modules:
        print("reach: the data files hold nothing of flax/nnx", file=sys.stderr)
        return 2
    print("\n".join(table(modules)))
    reached = totals(modules)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "unreached.txt").write_text("\n".join(unreached(modules)) + "\n", encoding="utf-8")
    summary = {
        "totals": asdict(reached),
        "modules": {
            m.module: {
                "lines": m.lines,
                "lines_reached": m.lines_reached,
                "branches": m.branches,
                "branches_reached": m.branches_reached,
            }
            for m in modules
        },
    }
    (args.out / "reach.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"reach: unreached lines and branches in {args.out / 'unreached.txt'}")
    if args.report and args.report.exists():
        report = json.loads(args.report.read_text(encoding="utf-8"))
        report["reach"] = asdict(reached)
        args.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.floor:
        return hold_floor(reached, json.loads(args.floor.read_text(encoding="utf-8")), args.floor)
    return 0


RATCHETED = ("lines_percent", "branches_percent")
"""The figures of the floor file that a run must reach (one the file does not give yet is not checked)."""


def hold_floor(reached: Totals, floor: dict[str, float], where: Path) -> int:
    """0 when ``reached`` holds every figure of ``floor``; else 1, saying which dropped."""
    below = [
        f"{key} {getattr(reached, key)}% < {floor[key]}%"
        for key in RATCHETED
        if key in floor and getattr(reached, key) < floor[key]
    ]
    if below:
        print(f"reach dropped below the committed floor ({where}): {', '.join(below)}", file=sys.stderr)
        return 1
    held = ", ".join(f"{key} {floor[key]}%" for key in RATCHETED if key in floor)
    print(f"reach holds the floor of {where}: {held}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
