"""Where cosmic-ray can mutate the reference, a seeded sample of those places, and the mutants.

cosmic-ray's ``init`` lists every mutation (operator and occurrence) of each module into
its work database; its ``mutate_code`` applies one of them to a source text. Places inside
type annotations are left out: under ``from __future__ import annotations`` they are never
evaluated, so every mutant there is equivalent by construction. So are the ``/``, ``*``
and ``**`` markers of parameter lists, which cosmic-ray takes for operators.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import parso
from cosmic_ray import plugins
from cosmic_ray.commands import init
from cosmic_ray.mutating import mutate_code
from cosmic_ray.work_db import WorkDB, use_db

_EQUIVALENT_LINE = re.compile(r"^(?P<fingerprint>[0-9a-f]{12})\b[^#]*#\s*(?P<reason>\S.*)$")


@dataclass(frozen=True)
class Site:
    """One mutation cosmic-ray can make: an operator's n-th occurrence in a module."""

    job_id: str
    module: str
    path: Path
    operator: str
    occurrence: int
    line: int


@dataclass(frozen=True)
class Mutant:
    """A site applied to its module's source: the mutated text, its diff and its fingerprint.

    The fingerprint hashes the module, the operator and the diff's lines, changed and the
    two unchanged neighbours on either side, blank ones left out (not their numbers): an
    entry of the equivalents file outlives edits elsewhere in the module, and two mutants
    making the same change (a decorator removed, a default flipped) in two places get two
    fingerprints.
    """

    site: Site
    source: str
    mutated: str
    diff: str
    fingerprint: str


class EquivalentsError(ValueError):
    """A line of the equivalents file is not ``FINGERPRINT ...  # reason``."""


def module_name(package: Path, path: Path) -> str:
    """The dotted name of the module at ``path`` in ``package`` (``nnx_reference.nn.linear``)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_path(package: Path, name: str) -> Path:
    """The source file of the dotted module ``name`` in ``package``; ValueError if there is none."""
    root, *rest = name.split(".")
    relative = Path(*rest)
    # the package itself (no dotted rest) is its __init__.py
    candidates = [package / relative.with_suffix(".py")] if rest else []
    for candidate in (*candidates, package / relative / "__init__.py"):
        if root == package.name and candidate.is_file():
            return candidate
    raise ValueError(f"no module {name!r} in {package}")


def _in_annotation(tree: parso.tree.NodeOrLeaf, position: tuple[int, int]) -> bool:
    """Whether the code at ``position`` lies in a parameter, return or variable annotation."""
    node = tree.get_leaf_for_position(position)
    while node is not None and node.parent is not None:
        before = node.get_previous_sibling()
        marker = getattr(before, "value", None)
        if (node.parent.type in ("tfpdef", "annassign") and marker == ":") or (
            node.parent.type == "funcdef" and marker == "->"
        ):
            return True
        node = node.parent
    return False


def _in_parameters(tree: parso.tree.NodeOrLeaf, position: tuple[int, int]) -> bool:
    """Whether the code at ``position`` is a ``/``, ``*`` or ``**`` marker of a parameter list.

    cosmic-ray takes these for operators; any change to them is a syntax error.
    """
    leaf = tree.get_leaf_for_position(position)
    return leaf is not None and leaf.type == "operator" and leaf.parent.type in ("parameters", "param")


def find_sites(package: Path, paths: Sequence[Path], database: Path) -> list[Site]:
    """Every site cosmic-ray finds in ``paths`` outside annotations and parameter markers,
    recorded in ``database``."""
    with use_db(str(database), WorkDB.Mode.create) as db:
        init(list(paths), db, {})
        items = list(db.work_items)
    trees = {path: parso.parse(path.read_text()) for path in paths}
    sites = []
    for item in items:
        (spec,) = item.mutations
        path = Path(spec.module_path)
        position = tuple(spec.start_pos)
        if _in_annotation(trees[path], position) or _in_parameters(trees[path], position):
            continue
        sites.append(
            Site(item.job_id, module_name(package, path), path, spec.operator_name, spec.occurrence, spec.start_pos[0])
        )
    return sorted(sites, key=lambda s: (s.module, s.line, s.operator, s.occurrence))


def sample(sites: Sequence[Site], size: int | None, seed: int, per_module: int = 0) -> list[Site]:
    """``size`` sites drawn without replacement by ``random.Random(seed)``, in source order:
    first ``per_module`` from each module (all of a module's when it has fewer), then the
    rest of ``size`` from all the sites left."""
    if size is None or size >= len(sites):
        return list(sites)
    draw = random.Random(seed)
    by_module: dict[str, list[int]] = {}
    for index, site in enumerate(sites):
        by_module.setdefault(site.module, []).append(index)
    chosen = set()
    for indices in by_module.values():
        chosen.update(draw.sample(indices, min(per_module, len(indices))))
    left = [index for index in range(len(sites)) if index not in chosen]
    chosen.update(draw.sample(left, max(0, min(size - len(chosen), len(left)))))
    return [site for index, site in enumerate(sites) if index in chosen]


def _fingerprint(site: Site, hunk: Iterable[str]) -> str:
    """``hunk``: the diff's lines after its headers, each with its ``-``, ``+`` or `` `` mark."""
    text = "\n".join([site.module, site.operator, *(line[:1] + line[1:].strip() for line in hunk)])
    return hashlib.sha1(text.encode()).hexdigest()[:12]


class UnmadeMutant(ValueError):
    """cosmic-ray failed to apply its operator at a site (its ExceptionReplacer fails on some
    exception tuples): the site has no mutant to judge."""


def make_mutant(site: Site, source: str) -> Mutant | None:
    """The mutant of ``source`` at ``site``, or None if cosmic-ray no longer finds the site
    (``UnmadeMutant`` where cosmic-ray fails to apply its operator there)."""
    operator = plugins.get_operator(site.operator)()
    try:
        mutated = mutate_code(source, operator, site.occurrence)
    except Exception as failure:  # any failure of cosmic-ray's operator
        raise UnmadeMutant(
            f"{site.module}:{site.line} {site.operator}: {type(failure).__name__}: {failure}"
        ) from failure
    if mutated is None or mutated == source:
        return None
    old, new = source.splitlines(), mutated.splitlines()
    name = site.module.replace(".", "/") + ".py"
    diff = "\n".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}", n=1, lineterm=""))
    hunk = [
        line
        for line in list(difflib.unified_diff(old, new, n=2, lineterm=""))[2:]
        if not line.startswith("@@") and line[1:].strip()
    ]
    return Mutant(site, source, mutated, diff, _fingerprint(site, hunk))


def read_equivalents(path: Path) -> dict[str, str]:
    """The equivalent mutants listed in ``path``: fingerprint to reason.

    Each line is ``FINGERPRINT  MODULE:LINE OPERATOR  # reason``; blank lines and lines
    that start with ``#`` are comments. Everything between the fingerprint and ``#`` is
    for the reader.
    """
    equivalents: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _EQUIVALENT_LINE.match(line)
        if match is None:
            raise EquivalentsError(
                f"{path}:{number}: expected 'FINGERPRINT  MODULE:LINE OPERATOR  # reason', got {raw!r}"
            )
        equivalents[match["fingerprint"]] = match["reason"]
    return equivalents
