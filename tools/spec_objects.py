"""Documented objects of the sdist, found by reading its source with ``ast`` (flax is never imported).

A dotted name such as ``flax.nnx.Module.sow`` is resolved by following imports from the
package ``__init__`` to the defining module. Objects that flax re-exports from other
packages (``jax.nn.relu`` as ``nnx.relu``) are imported from that package and their
docstrings read with ``inspect.getdoc``, as sphinx would render them.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass, field

from .spec_sdist import Sdist


@dataclass(frozen=True)
class Documented:
    """An object's docstring as the docs render it, and where its text lives."""

    name: str
    doc: str
    source: str  # sdist path, or "jax:<dotted name>" for re-exported objects
    line: int | None  # file line of the first line of ``doc``; None when not in the sdist


@dataclass(frozen=True)
class ModuleRef:
    """A module of the sdist."""

    modname: str


@dataclass(frozen=True)
class LocalRef:
    """A definition (class, function, assignment) in a module of the sdist."""

    modname: str
    node: ast.AST
    doc_node: ast.Constant | None  # the string literal holding its docstring, if any


@dataclass(frozen=True)
class ExternalRef:
    """An object defined outside the sdist (jax, optax, ...), by dotted name."""

    dotted: str


Ref = ModuleRef | LocalRef | ExternalRef


@dataclass
class _Symbols:
    """The top-level bindings of one module, in runtime (last binding wins) order."""

    bindings: dict[str, tuple] = field(default_factory=dict)
    doc_overrides: dict[str, ast.Constant] = field(default_factory=dict)  # X.__doc__ = "..."
    star_imports: list[str] = field(default_factory=list)


class SourceTree:
    """Resolves dotted names against the Python source of an sdist."""

    def __init__(self, sdist: Sdist) -> None:
        self._sdist = sdist
        self._symbols: dict[str, _Symbols] = {}
        self._trees: dict[str, ast.Module] = {}

    # -- modules ------------------------------------------------------------------------

    def module_path(self, modname: str) -> str | None:
        """The sdist path of module ``modname``, or None when the sdist does not hold it."""
        base = modname.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if self._sdist.has(candidate):
                return candidate
        return None

    def is_package(self, modname: str) -> bool:
        path = self.module_path(modname)
        return path is not None and path.endswith("__init__.py")

    def tree(self, modname: str) -> ast.Module:
        if modname not in self._trees:
            path = self.module_path(modname)
            assert path is not None, modname
            self._trees[modname] = ast.parse(self._sdist.read(path), filename=path)
        return self._trees[modname]

    def _module_symbols(self, modname: str) -> _Symbols:
        if modname not in self._symbols:
            symbols = _Symbols()
            package = modname if self.is_package(modname) else modname.rpartition(".")[0]
            for stmt in _runtime_statements(self.tree(modname).body):
                _bind(symbols, stmt, package)
            self._symbols[modname] = symbols
        return self._symbols[modname]

    def submodule_names(self, modname: str) -> frozenset[str]:
        """Names in module ``modname`` that are modules of the sdist (``graphlib``, ``initializers``)."""
        names = {
            name
            for name in self._module_symbols(modname).bindings
            if isinstance(self.resolve_in(modname, name), ModuleRef)
        }
        prefix = modname.replace(".", "/") + "/"
        for path in self._sdist.files:
            if path.startswith(prefix) and path.endswith(".py"):
                child = path[len(prefix) :].split("/")[0].removesuffix(".py")
                if child != "__init__" and not child.startswith("_"):
                    names.add(child)
        return frozenset(names)

    # -- resolution ---------------------------------------------------------------------

    def resolve_in(self, modname: str, name: str, _seen: frozenset = frozenset()) -> Ref | None:
        """What ``name`` is bound to in module ``modname`` (None if unknown)."""
        key = (modname, name)
        submodule = f"{modname}.{name}"
        if key in _seen:  # `from . import x` inside package `p` binds the submodule `p.x`
            return ModuleRef(submodule) if self.module_path(submodule) else None
        seen = _seen | {key}
        symbols = self._module_symbols(modname)
        binding = symbols.bindings.get(name)
        if binding is not None:
            kind = binding[0]
            if kind == "def":
                return LocalRef(modname, binding[1], _docstring_node(binding[1]))
            if kind == "from":
                return self._resolve_from(binding[1], binding[2], seen)
            if kind == "module":
                return ModuleRef(binding[1]) if self.module_path(binding[1]) else ExternalRef(binding[1])
            if kind == "assign":
                node, doc_node = binding[1], symbols.doc_overrides.get(name) or binding[2]
                value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
                if doc_node is None and isinstance(value, (ast.Name, ast.Attribute)):
                    aliased = self.resolve_expr(modname, value, seen)
                    if aliased is not None:
                        return aliased
                if doc_node is None and _is_wrapper_call(value):  # pure = deprecated(as_pure)
                    wrapped = self.resolve_expr(modname, value.args[0], seen)
                    if isinstance(wrapped, LocalRef) and isinstance(wrapped.node, ast.FunctionDef):
                        return wrapped
                return LocalRef(modname, node, doc_node)
        if self.module_path(submodule):
            return ModuleRef(submodule)
        for star in symbols.star_imports:
            if self.module_path(star):
                found = self.resolve_in(star, name, seen)
                if found is not None:
                    return found
        return None

    def _resolve_from(self, module: str, name: str, seen: frozenset) -> Ref | None:
        if self.module_path(module) is None:
            return None if module.split(".")[0] == "flax" else ExternalRef(f"{module}.{name}")
        return self.resolve_in(module, name, seen)

    def resolve_expr(self, modname: str, expr: ast.expr, seen: frozenset = frozenset()) -> Ref | None:
        """What a ``Name`` or ``Attribute`` expression in module ``modname`` refers to."""
        if isinstance(expr, ast.Subscript):  # Variable[A] as a base class
            return self.resolve_expr(modname, expr.value, seen)
        if isinstance(expr, ast.Name):
            return self.resolve_in(modname, expr.id, seen)
        if isinstance(expr, ast.Attribute):
            owner = self.resolve_expr(modname, expr.value, seen)
            return None if owner is None else self.attribute(owner, expr.attr)
        return None

    def attribute(self, owner: Ref, name: str) -> Ref | None:
        """``owner.name``: a module attribute, a class member, or a re-exported object's attribute."""
        if isinstance(owner, ModuleRef):
            return self.resolve_in(owner.modname, name)
        if isinstance(owner, ExternalRef):
            return ExternalRef(f"{owner.dotted}.{name}")
        if isinstance(owner.node, ast.ClassDef):
            for klass in self.mro(owner):
                member = self.class_body(klass).get(name)
                if member is not None:
                    return member
        return None

    def resolve(self, dotted: str) -> Ref | None:
        """Resolves a full dotted name (``flax.nnx.Module.sow``)."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            modname = ".".join(parts[:cut])
            if self.module_path(modname):
                ref: Ref | None = ModuleRef(modname)
                for part in parts[cut:]:
                    ref = None if ref is None else self.attribute(ref, part)
                return ref
        return ExternalRef(dotted) if parts[0] != "flax" else None

    # -- classes ------------------------------------------------------------------------

    def class_body(self, klass: LocalRef) -> dict[str, LocalRef]:
        """The members a class body defines, in source order (properties keep their getter)."""
        assert isinstance(klass.node, ast.ClassDef)
        members: dict[str, LocalRef] = {}
        body = list(_runtime_statements(klass.node.body))
        for index, stmt in enumerate(body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _is_overload(stmt) or _is_property_accessor(stmt):
                    continue
                members[stmt.name] = LocalRef(klass.modname, stmt, _docstring_node(stmt))
            elif isinstance(stmt, ast.ClassDef):
                members[stmt.name] = LocalRef(klass.modname, stmt, _docstring_node(stmt))
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                target = _single_target(stmt)
                if target is not None:
                    following = body[index + 1] if index + 1 < len(body) else None
                    members[target] = LocalRef(klass.modname, stmt, _string_expr(following))
        return members

    def bases(self, klass: LocalRef) -> list[LocalRef]:
        """The base classes of ``klass`` that the sdist defines."""
        assert isinstance(klass.node, ast.ClassDef)
        found = []
        for base in klass.node.bases:
            ref = self.resolve_expr(klass.modname, base)
            if isinstance(ref, LocalRef) and isinstance(ref.node, ast.ClassDef):
                found.append(ref)
        return found

    def mro(self, klass: LocalRef) -> list[LocalRef]:
        """The C3 linearization of ``klass`` over the classes the sdist defines."""
        sequences = [self.mro(base) for base in self.bases(klass)] + [self.bases(klass)]
        result = [klass]
        sequences = [list(seq) for seq in sequences if seq]
        while sequences:
            for seq in sequences:
                head = seq[0]
                if not any(head in other[1:] for other in sequences):
                    break
            else:  # inconsistent hierarchy: fall back to depth-first order
                rest = [k for seq in sequences for k in seq]
                return result + [k for i, k in enumerate(rest) if k not in rest[:i]]
            result.append(head)
            sequences = [[k for k in seq if k != head] for seq in sequences]
            sequences = [seq for seq in sequences if seq]
        return result

    def is_dataclass(self, klass: LocalRef) -> bool:
        """Whether a class is a dataclass at runtime: decorated as one, or built on a
        ``dataclass_transform`` base (its undocumented subclasses get a generated signature
        as ``__doc__`` instead of inheriting their base's docstring)."""
        assert isinstance(klass.node, ast.ClassDef)
        if any(name.split(".")[-1] == "dataclass" for name in _decorator_names(klass.node)):
            return True
        return any(
            any(name.split(".")[-1] == "dataclass_transform" for name in _decorator_names(base.node))
            for base in self.mro(klass)[1:]
        )

    # -- docstrings ---------------------------------------------------------------------

    def document(self, name: str, ref: Ref, owner: LocalRef | None = None) -> Documented:
        """The docstring shown for ``ref`` under ``name``; members inherit from ``owner``'s bases."""
        if isinstance(ref, ExternalRef):
            return Documented(name, _external_doc(ref.dotted), f"jax:{ref.dotted}", None)
        if isinstance(ref, ModuleRef):
            node = _docstring_node(self.tree(ref.modname))
            return self._documented(name, ref.modname, node)
        doc_node = ref.doc_node
        if doc_node is None and isinstance(ref.node, ast.ClassDef) and not self.is_dataclass(ref):
            for base in self.mro(ref)[1:]:
                if base.doc_node is not None:
                    return self._documented(name, base.modname, base.doc_node)
        if doc_node is None and owner is not None:
            member = _node_name(ref.node)
            for base in self.mro(owner)[1:]:
                inherited = self.class_body(base).get(member)
                if inherited is not None and inherited.doc_node is not None:
                    return self._documented(name, base.modname, inherited.doc_node)
        return self._documented(name, ref.modname, doc_node)

    def _documented(self, name: str, modname: str, node: ast.Constant | None) -> Documented:
        path = self.module_path(modname)
        assert path is not None
        if node is None:
            return Documented(name, "", path, None)
        raw = node.value
        return Documented(name, inspect.cleandoc(raw), path, node.lineno + _leading_lines(raw))


def _runtime_statements(body: list[ast.stmt]):
    """Statements that run at import time, descending into ``if``/``try`` (``TYPE_CHECKING`` is false)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                yield from _runtime_statements(stmt.orelse)
            else:
                yield from _runtime_statements(stmt.body)
                yield from _runtime_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _runtime_statements(stmt.body)
            for handler in stmt.handlers:
                yield from _runtime_statements(handler.body)
        else:
            yield stmt


def _bind(symbols: _Symbols, stmt: ast.stmt, package: str) -> None:
    """Records what a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if not _is_overload(stmt):
            symbols.bindings[stmt.name] = ("def", stmt)
    elif isinstance(stmt, ast.ImportFrom):
        module = _absolute_module(stmt, package)
        for alias in stmt.names:
            if alias.name == "*":
                symbols.star_imports.append(module)
            else:
                symbols.bindings[alias.asname or alias.name] = ("from", module, alias.name)
    elif isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                symbols.bindings[alias.asname] = ("module", alias.name)
            else:
                top = alias.name.split(".")[0]
                symbols.bindings[top] = ("module", top)
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        target = _single_target(stmt)
        if target is not None:
            symbols.bindings[target] = ("assign", stmt, None)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            doc_target = stmt.targets[0]
            if (
                isinstance(doc_target, ast.Attribute)
                and doc_target.attr == "__doc__"
                and isinstance(doc_target.value, ast.Name)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                symbols.doc_overrides[doc_target.value.id] = stmt.value


def _absolute_module(stmt: ast.ImportFrom, package: str) -> str:
    if not stmt.level:
        return stmt.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (stmt.level - 1)]
    return ".".join(base + ([stmt.module] if stmt.module else []))


def _single_target(stmt: ast.Assign | ast.AnnAssign) -> str | None:
    targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else stmt.targets
    if len(targets) == 1 and isinstance(targets[0], ast.Name):
        return targets[0].id
    return None


def _docstring_node(node: ast.AST) -> ast.Constant | None:
    body = getattr(node, "body", None)
    if body and isinstance(body, list):
        return _string_expr(body[0])
    return None


def _string_expr(stmt: ast.stmt | None) -> ast.Constant | None:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return stmt.value
    return None


def _is_wrapper_call(value: ast.expr | None) -> bool:
    """``wrapper(function)``: a call with a single positional name argument."""
    return (
        isinstance(value, ast.Call)
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], (ast.Name, ast.Attribute))
    )


def _node_name(node: ast.AST) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return _single_target(node)
    return None


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    return [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]


def _is_overload(node: ast.stmt) -> bool:
    return any(name.split(".")[-1] == "overload" for name in _decorator_names(node))


def _is_property_accessor(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(name.endswith((".setter", ".deleter")) for name in _decorator_names(node))


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test).split(".")[-1] == "TYPE_CHECKING"


def _leading_lines(raw: str) -> int:
    """How many leading lines ``inspect.cleandoc`` drops from a raw docstring."""
    lines = raw.expandtabs().split("\n")
    dropped = 0
    while dropped < len(lines) - 1 and not lines[dropped].strip():
        dropped += 1
    return dropped


def _external_doc(dotted: str) -> str:
    """``inspect.getdoc`` of an object outside the sdist (jax, optax), imported by dotted name."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return inspect.getdoc(obj) or ""
    raise ImportError(f"cannot import {dotted} to read its docstring")
