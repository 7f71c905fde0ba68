"""The API reference pages: their autodoc directives, resolved to docstring sections.

Approximates what sphinx renders for ``docs_nnx/api_reference/flax.nnx/*.rst`` with flax's
``conf.py`` (autodoc with ``autodoc_member_order`` left at "alphabetical",
``autodoc_inherit_docstrings`` left on) and flax's ``flax_module`` directive.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .spec_objects import Documented, LocalRef, Ref, SourceTree

#: What sphinx accepts as the argument of an auto* directive (a bare dotted name here).
_NAME_RE = re.compile(r"^[\w.]+$")
_DIRECTIVE_RE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_OPTION_RE = re.compile(r"^\s+:([\w-]+):\s*(.*)$")
#: Methods the flax_module template leaves out.
_FLAX_MODULE_SKIPPED = ("__init__", "setup")


@dataclass(frozen=True)
class Directive:
    """One ``.. name:: argument`` block of an rst page, with its ``:option: value`` lines."""

    name: str
    argument: str
    options: dict[str, str]
    line: int


@dataclass
class ApiPage:
    """An API reference page: the docstring sections it documents, in page order."""

    sections: list[Documented] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_directives(text: str) -> list[Directive]:
    """The directives of an rst page, in order (only top-level ones are used by these pages)."""
    lines = text.split("\n")
    directives = []
    for index, line in enumerate(lines):
        match = _DIRECTIVE_RE.match(line)
        if not match:
            continue
        options: dict[str, str] = {}
        for option_line in lines[index + 1 :]:
            option = _OPTION_RE.match(option_line)
            if not option:
                break
            options[option.group(1)] = option.group(2).strip()
        directives.append(Directive(match.group(1), match.group(2).strip(), options, index + 1))
    return directives


def resolve_api_page(text: str, tree: SourceTree) -> ApiPage:
    """Resolves the directives of one rst page into the sections sphinx would render."""
    page = ApiPage()
    current = ""
    for directive in parse_directives(text):
        if directive.name in ("currentmodule", "automodule"):
            current = directive.argument
            if directive.name == "automodule" and directive.options.get("members"):
                for member in sorted(_member_list(directive.options["members"])):
                    _add(page, tree, f"{current}.{member}")
        elif directive.name in ("autofunction", "autodata", "autoclass"):
            if not _NAME_RE.match(directive.argument):
                page.warnings.append(
                    f"line {directive.line}: invalid signature {directive.argument!r} for "
                    f"{directive.name}; sphinx documents nothing for it"
                )
                continue
            fullname = _qualify(directive.argument, current)
            ref = _add(page, tree, fullname)
            if directive.name == "autoclass" and "members" in directive.options and ref is not None:
                _add_members(page, tree, fullname, ref, directive.options["members"])
        elif directive.name == "flax_module":
            fullname = f"{directive.options['module']}.{directive.options['class']}"
            ref = _add(page, tree, fullname)
            if ref is not None:
                _add_flax_module_methods(page, tree, fullname, ref)
    return page


def _qualify(name: str, current: str) -> str:
    """A directive's name as sphinx resolves it: dotted names are absolute."""
    return name if "." in name or not current else f"{current}.{name}"


def _member_list(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def _add(page: ApiPage, tree: SourceTree, fullname: str, owner: LocalRef | None = None) -> Ref | None:
    ref = tree.resolve(fullname)
    if ref is None:
        page.warnings.append(f"cannot resolve {fullname}; sphinx would warn and skip it")
        return None
    page.sections.append(tree.document(fullname, ref, owner))
    return ref


def _add_members(page: ApiPage, tree: SourceTree, fullname: str, ref: Ref, members: str) -> None:
    """``autoclass :members:``: the listed members, or every public documented own member."""
    if not isinstance(ref, LocalRef) or not isinstance(ref.node, ast.ClassDef):
        page.warnings.append(f"{fullname} is not a class of the sdist; its members are not listed")
        return
    body = tree.class_body(ref)
    if members:
        names = _member_list(members)
    else:
        names = [name for name in body if not name.startswith("_")]
    for name in sorted(names):
        member = tree.attribute(ref, name)
        if member is None:
            page.warnings.append(f"{fullname} has no member {name}")
            continue
        documented = tree.document(f"{fullname}.{name}", member, owner=ref)
        if documented.doc:  # sphinx skips members without a docstring (no :undoc-members:)
            page.sections.append(documented)


def _add_flax_module_methods(page: ApiPage, tree: SourceTree, fullname: str, ref: Ref) -> None:
    """The ``flax_module`` template: ``__call__``, then the class's own public methods."""
    if not isinstance(ref, LocalRef) or not isinstance(ref.node, ast.ClassDef):
        page.warnings.append(f"{fullname} is not a class of the sdist; flax_module lists nothing")
        return
    call = tree.attribute(ref, "__call__")
    if call is not None:
        page.sections.append(tree.document(f"{fullname}.__call__", call, owner=ref))
    methods = [
        name
        for name, member in tree.class_body(ref).items()
        if _is_plain_method(member.node) and not name.startswith("_") and name not in _FLAX_MODULE_SKIPPED
    ]
    for name in sorted(methods):
        page.sections.append(tree.document(f"{fullname}.{name}", tree.class_body(ref)[name], owner=ref))


def _is_plain_method(node: ast.AST) -> bool:
    """A function in a class body that autosummary counts as a method (not a property)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    decorators = [ast.unparse(d) for d in node.decorator_list]
    return not any(d.split(".")[-1] in ("property", "cached_property") for d in decorators)
