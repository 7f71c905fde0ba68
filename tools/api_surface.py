"""Dump the public API surface of an NNX implementation to JSON, or diff two dumps.

    python -m tools.api_surface dump flax.nnx -o conformance/src/nnx_conformance/data/flax_api.json \
        --pages /path/to/flax-0.12.12/docs_nnx/api_reference/flax.nnx
    python -m tools.api_surface dump nnx_reference -o /tmp/reference_api.json
    python -m tools.api_surface diff flax_api.json reference_api.json

The dump is deterministic (sorted names, no memory addresses), so the committed
``flax_api.json`` only changes when the pinned flax does. The diff lists, from the
point of view of the first dump, the names the second lacks, the names it adds and
every incompatible kind or signature; it exits with 1 when the second dump is not
compatible with the first. With ``--pages`` (the API reference pages of the pinned
sdist) each name documented there carries its page id as ``area``, e.g. ``graph`` or
``nn/linear``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from nnx_conformance.surface import EXCLUDED, dump, problems

from .rst_pages import parse_directives

#: An auto* directive's argument that sphinx documents: a bare dotted name.
_NAME = re.compile(r"[\w.]+")


def documented_areas(pages: Path, module: str = "flax.nnx") -> dict[str, str]:
    """The API reference page id (path without ``.rst``) documenting each name: the
    ``autoclass``/``autofunction``/``autodata``/``flax_module`` entries and the
    ``:members:`` of an ``automodule`` (directives as ``rst_pages`` parses them). A name
    documented directly under ``module`` wins over the same name documented in a submodule
    (``flax.nnx.optimizer.Optimizer``)."""
    direct: dict[str, str] = {}
    indirect: dict[str, str] = {}
    for page in sorted(pages.rglob("*.rst")):
        area, current = page.relative_to(pages).with_suffix("").as_posix(), module
        for directive in parse_directives(page.read_text()):
            names: list[str] = []
            if directive.name in ("currentmodule", "automodule"):
                current = directive.argument
                members = directive.options.get("members", "") if directive.name == "automodule" else ""
                names = [
                    f"{current}.{member.strip()}"
                    for member in members.split(",")
                    if member.strip() not in ("", "__init__")
                ]
            elif directive.name in ("autoclass", "autofunction", "autodata") and _NAME.fullmatch(directive.argument):
                target = directive.argument
                names = [target if target.startswith(module + ".") else f"{current}.{target}"]
            elif directive.name == "flax_module" and "class" in directive.options:
                names = [f"{current}.{directive.options['class']}"]
            for qualified in names:
                parent, _, name = qualified.rpartition(".")
                (direct if parent == module else indirect).setdefault(name, area)
    return {**indirect, **direct}


def write_dump(module_name: str, output: Path | None, pages: Path | None) -> None:
    data = dump(module_name)
    if pages is not None:
        areas = documented_areas(pages)
        for name, entry in data["names"].items():
            if name in areas:
                entry["area"] = areas[name]
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)


def diff(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """The lines of the report on how ``actual`` departs from ``expected``.

    Names the suite does not require (``EXCLUDED``, with their reasons) are listed as
    excluded, not missing.
    """
    want, got = expected["names"], actual["names"]
    lines = [f"extra: {name} ({got[name]['kind']})" for name in sorted(set(got) - set(want))]
    lines += [f"excluded: {name} ({EXCLUDED[name]})" for name in sorted(set(want) - set(got)) if name in EXCLUDED]
    want = {name: entry for name, entry in want.items() if name not in EXCLUDED}
    lines += [f"missing: {name} ({want[name]['kind']})" for name in sorted(set(want) - set(got))]
    for name in sorted(set(want) & set(got)):
        lines += [f"incompatible: {problem}" for problem in problems(name, want[name], got[name])]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    dump_parser = commands.add_parser("dump", help="write the surface of an importable module as JSON")
    dump_parser.add_argument("module", help="e.g. flax.nnx or nnx_reference")
    dump_parser.add_argument("-o", "--output", type=Path, help="the JSON file (default: standard output)")
    dump_parser.add_argument("--pages", type=Path, help="the API reference pages (docs_nnx/api_reference/flax.nnx)")
    diff_parser = commands.add_parser("diff", help="compare a dump (the spec) with another")
    diff_parser.add_argument("expected", type=Path)
    diff_parser.add_argument("actual", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        write_dump(args.module, args.output, args.pages)
        return 0
    expected, actual = (json.loads(path.read_text()) for path in (args.expected, args.actual))
    lines = diff(expected, actual)
    print("\n".join(lines) if lines else f"{actual['module']} is compatible with {expected['module']}")
    incompatible = any(line.startswith(("missing:", "incompatible:")) for line in lines)
    return 1 if incompatible else 0


if __name__ == "__main__":
    sys.exit(main())
