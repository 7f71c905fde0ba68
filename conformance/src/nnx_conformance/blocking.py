"""Which later examples a failed example blocks: the names it was to define.

When an example fails before defining its names, the examples after it on the page
that use one of those names cannot run as documented; they are skipped as
"blocked by <example id>", and what they in turn were to define is blocked too.
When the failing line of a code block is known, the top-level statements before it
ran, and only the names bound from that statement on are blocked.
"""

from __future__ import annotations

import ast


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _defined_by(statements: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for statement in statements:
        match statement:
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                names.add(statement.name)
            case ast.Import() | ast.ImportFrom():
                for alias in statement.names:
                    names.add(alias.asname or alias.name.partition(".")[0])
            case ast.Assign() | ast.AugAssign() | ast.AnnAssign():
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    names |= _targets(target)
            case ast.For() | ast.AsyncFor():
                names |= _targets(statement.target)
                names |= _defined_by(statement.body + statement.orelse)
            case ast.With() | ast.AsyncWith():
                for item in statement.items:
                    if item.optional_vars is not None:
                        names |= _targets(item.optional_vars)
                names |= _defined_by(statement.body)
            case ast.If() | ast.While():
                names |= _defined_by(statement.body + statement.orelse)
            case ast.Try():
                handlers = [s for h in statement.handlers for s in h.body]
                names |= _defined_by(statement.body + handlers + statement.orelse + statement.finalbody)
    return names


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def defined_names(source: str, from_line: int = 1) -> set[str]:
    """Top-level names that ``source`` assigns, imports or defines in statements that end
    on or after line ``from_line``."""
    tree = _parse(source)
    if tree is None:
        return set()
    return _defined_by([s for s in tree.body if (s.end_lineno or s.lineno) >= from_line])


_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def _reads(node: ast.AST) -> set[str]:
    """Names ``node`` reads, less those its comprehensions and lambdas bind for themselves."""
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local: set[str] = set()
    for scope in (n for n in ast.walk(node) if isinstance(n, _SCOPES)):
        local |= _targets(scope)
        if isinstance(scope, ast.Lambda):
            local |= {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
    return loads - local


def _own_names(definition: ast.AST) -> set[str]:
    """Names a function or class binds for itself: its own name, and every parameter,
    assignment, nested definition, import and ``except ... as`` name inside it."""
    names = _targets(definition)
    for node in ast.walk(definition):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _free_in(statements: list[ast.stmt], bound: set[str]) -> set[str]:
    """Names read by ``statements`` before they bind them, in order; ``bound`` grows as they bind."""
    free: set[str] = set()
    for statement in statements:
        match statement:
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                free |= _reads(statement) - bound - _own_names(statement)
            case ast.With() | ast.AsyncWith():
                for item in statement.items:
                    free |= _reads(item.context_expr) - bound
                    if item.optional_vars is not None:
                        bound |= _targets(item.optional_vars)
                free |= _free_in(statement.body, bound)
            case ast.For() | ast.AsyncFor():
                free |= _reads(statement.iter) - bound
                bound |= _targets(statement.target)
                free |= _free_in(statement.body + statement.orelse, bound)
            case ast.If() | ast.While():
                free |= _reads(statement.test) - bound
                bound |= _targets(statement.test)  # `if (x := ...):` binds x for the body
                free |= _free_in(statement.body + statement.orelse, bound)
            case ast.Try():
                free |= _free_in(statement.body, bound)
                for handler in statement.handlers:
                    if handler.type is not None:
                        free |= _reads(handler.type) - bound
                    free |= _free_in(handler.body, bound | ({handler.name} if handler.name else set()))
                free |= _free_in(statement.orelse + statement.finalbody, bound)
            case _:
                free |= _reads(statement) - bound
        bound |= _defined_by([statement])
    return free


def free_names(source: str) -> set[str]:
    """The names ``source`` reads before binding them itself, in statement order
    (``x = f(x)`` reads ``x`` first), in functions and classes too."""
    tree = _parse(source)
    return set() if tree is None else _free_in(tree.body, set())


class Blockers:
    """The names a page's failed examples left undefined, and which example to blame."""

    def __init__(self) -> None:
        self._blamed: dict[str, str] = {}

    def block(self, source: str, culprit: str, from_line: int = 1) -> None:
        """Blame ``culprit`` for the names ``source`` binds from line ``from_line`` on."""
        for name in defined_names(source, from_line):
            self._blamed[name] = culprit

    def release(self, source: str) -> None:
        """An example that ran defined its names: they no longer block."""
        for name in defined_names(source):
            self._blamed.pop(name, None)

    def culprit(self, source: str) -> str | None:
        """The failed example whose names ``source`` uses (before defining them), if any."""
        for name in sorted(free_names(source)):
            if name in self._blamed:
                return self._blamed[name]
        return None
