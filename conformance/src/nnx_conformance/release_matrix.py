"""The pinned spec against several flax releases: one release x area matrix.

Each release's run writes its own conformance report (``nox -s releases`` runs the
documentation examples against ``flax.nnx`` in a venv per release); this module reads
those reports and renders the matrix a doc-regression check reads: per area and
release, how many examples passed out of those that ran, and which failed.

    python -m nnx_conformance.release_matrix reports/releases --out reports/releases/matrix
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPORT_NAME = "conformance.json"
INSTALL_FAILURE_NAME = "install-failure.txt"
"""Written in a release's folder instead of a report when the release does not install here."""


@dataclass(frozen=True)
class Cell:
    """One area on one release: examples that passed, failed, and the ids of the failures."""

    passed: int
    failed: int
    failures: tuple[str, ...] = ()

    def text(self) -> str:
        ran = self.passed + self.failed
        return f"{self.passed}/{ran}" if self.failed else f"{ran}/{ran}"


@dataclass(frozen=True)
class Release:
    """A release's column: its cells by area, or why it has none."""

    version: str
    cells: dict[str, Cell] = field(default_factory=dict)
    unavailable: str | None = None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def read_release(folder: Path) -> Release:
    """The column of the release whose run wrote into ``folder`` (named after the version)."""
    version = folder.name
    failure = folder / INSTALL_FAILURE_NAME
    if failure.is_file():
        return Release(version, unavailable=failure.read_text(encoding="utf-8").strip().splitlines()[-1])
    report_path = folder / REPORT_NAME
    if not report_path.is_file():
        return Release(version, unavailable=f"no report in {folder}")
    report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    by_area: dict[str, list[dict[str, Any]]] = {}
    for test in report["tests"]:
        if test["outcome"] in ("passed", "failed", "xpassed", "xfailed"):
            by_area.setdefault(test["area"], []).append(test)
    cells = {
        area: Cell(
            passed=sum(t["outcome"] == "passed" for t in tests),
            failed=sum(t["outcome"] != "passed" for t in tests),
            failures=tuple(sorted(t["id"] for t in tests if t["outcome"] != "passed")),
        )
        for area, tests in sorted(by_area.items())
    }
    return Release(version, cells)


def read_matrix(root: Path) -> list[Release]:
    """Every release folder under ``root``, oldest release first."""
    folders = [p for p in root.iterdir() if p.is_dir() and p.name[:1].isdigit()]
    return [read_release(folder) for folder in sorted(folders, key=lambda p: _version_key(p.name))]


def render_markdown(releases: list[Release]) -> str:
    """The matrix as Markdown: a row per area, a column per release, then the failures."""
    areas = sorted({area for release in releases for area in release.cells})
    lines = [
        "# The pinned spec across flax releases",
        "",
        "Examples passed out of those run, per documentation page.",
        "",
        "| area | " + " | ".join(r.version for r in releases) + " |",
        "| --- | " + " | ".join("---:" for _ in releases) + " |",
    ]
    for area in areas:
        cells = [r.cells[area].text() if area in r.cells else "-" for r in releases]
        lines.append(f"| {area} | " + " | ".join(cells) + " |")
    notes = [f"- {r.version}: not run ({r.unavailable})" for r in releases if r.unavailable]
    failures = [
        f"- {r.version}: `{test_id}`" for r in releases for cell in r.cells.values() for test_id in cell.failures
    ]
    if notes or failures:
        lines += ["", "## Not run and failing", "", *notes, *failures]
    return "\n".join(lines) + "\n"


def to_json(releases: list[Release]) -> dict[str, Any]:
    return {"releases": [asdict(release) for release in releases]}


def write(releases: list[Release], out: Path) -> tuple[Path, Path]:
    """Write ``out``.json and ``out``.md; return both paths."""
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out.with_suffix(".json"), out.with_suffix(".md")
    json_path.write_text(json.dumps(to_json(releases), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(releases), encoding="utf-8")
    return json_path, md_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the folder holding one folder per release")
    parser.add_argument("--out", type=Path, help="where to write the matrix (default ROOT/matrix)")
    args = parser.parse_args(argv)
    releases = read_matrix(args.root)
    json_path, md_path = write(releases, args.out or args.root / "matrix")
    print(md_path.read_text(encoding="utf-8"), end="")
    print(f"matrix: {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
