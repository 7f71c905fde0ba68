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


def _bindings(node: ast.AST, scopes: bool = False) -> set[str]:
    """The names ``node`` binds where it runs: assignment, ``for``, ``with`` and walrus
    targets, import aliases, the names of functions and classes, ``match`` captures.

    Function and class bodies, lambdas and comprehensions bind their own names, and are
    not entered (a walrus in a comprehension still binds outside it); an ``except ... as``
    name is unbound after its handler. With ``scopes``, every name bound anywhere inside
    ``node`` counts, parameters and ``except ... as`` names included.
    """
    names: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        match current:
            case ast.Name(ctx=ast.Store()):
                names.add(current.id)
            case ast.Import() | ast.ImportFrom():
                names |= {alias.asname or alias.name.partition(".")[0] for alias in current.names if alias.name != "*"}
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                names.add(current.name)
                if not scopes:
                    continue
            case ast.Lambda() if not scopes:
                continue
            case ast.comprehension() if not scopes:
                pending += [current.iter, *current.ifs]  # its target is the comprehension's own
                continue
            case ast.MatchAs() | ast.MatchStar() if current.name:
                names.add(current.name)
            case ast.MatchMapping() if current.rest:
                names.add(current.rest)
            case ast.arg():
                names.add(current.arg)
            case ast.ExceptHandler() if scopes and current.name:
                names.add(current.name)
        pending.extend(ast.iter_child_nodes(current))
    return names


def _defined_by(statements: list[ast.stmt]) -> set[str]:
    return set().union(*(_bindings(statement) for statement in statements))


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
    assignment, nested definition, import, ``match`` capture and ``except ... as`` name inside it."""
    return _bindings(definition, scopes=True)


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
                bound |= _bindings(statement.test)  # `if (x := ...):` binds x for the body
                free |= _free_in(statement.body + statement.orelse, bound)
            case ast.Try():
                free |= _free_in(statement.body, bound)
                for handler in statement.handlers:
                    if handler.type is not None:
                        free |= _reads(handler.type) - bound
                    free |= _free_in(handler.body, bound | ({handler.name} if handler.name else set()))
                free |= _free_in(statement.orelse + statement.finalbody, bound)
            case ast.Match():
                free |= _reads(statement.subject) - bound
                for case in statement.cases:
                    free |= _reads(case.pattern) - bound
                    captured = bound | _bindings(case.pattern)
                    if case.guard is not None:
                        free |= _reads(case.guard) - captured
                    free |= _free_in(case.body, captured)
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
