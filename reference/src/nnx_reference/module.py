"""Module: the base class of layers, with sow/perturb, train/eval and views.

``Module.sow`` and ``Module.perturb`` store intermediate values. Outside
:func:`capture` they become Variables attributes of the module (deprecated: they warn),
or nothing with ``capture_noop``; inside, they go to the State the capture returns
(only for the Variable types it asked for).
"""

from __future__ import annotations

import functools
import inspect
import re
import typing as tp
import warnings

import jax.numpy as jnp

from . import _structure, graphlib
from ._config import SOW_CAPTURE_NOOP
from .filterlib import to_predicate
from .pytreelib import Pytree, data
from .statelib import FlatState, State, from_flat_state, to_flat_state
from .variablelib import Perturbation, Variable, variable_type_from_name

__all__ = [
    "M",
    "Module",
    "capture",
    "iter_modules",
    "view",
    "view_info",
    "with_attributes",
]

A = tp.TypeVar("A")
M = tp.TypeVar("M", bound="Module")
PathParts = tuple[tp.Hashable, ...]


def _as_variable_type(variable_type: type[Variable[tp.Any]] | str) -> type[Variable[tp.Any]]:
    if isinstance(variable_type, str):
        return variable_type_from_name(variable_type, allow_register=True)
    return variable_type


class Module(Pytree):
    """Base class for all neural network modules."""

    _pytree__colored = True  # treescope renders a Module on a color of its class, as flax's
    _records_method_outputs: tp.ClassVar[bool] = True
    """Whether ``capture(..., method_outputs=...)`` makes this class's methods sow (List's do not)."""

    def sow(
        self,
        variable_type: type[Variable[tp.Any]] | str,
        name: str,
        value: tp.Any,
        reduce_fn: tp.Callable[[tp.Any, tp.Any], tp.Any] = lambda prev, cur: (*prev, cur),
        init_fn: tp.Callable[[], tp.Any] = lambda: (),
        capture_noop: bool | None = None,
    ) -> bool:
        """Stores ``reduce_fn(previous or init_fn(), value)`` under ``name``; returns whether it stored.

        Inside :func:`capture` the value goes to the capture of ``variable_type`` (a no-op
        returning False if that type is not captured); outside, to a Variable attribute, or
        nowhere when ``capture_noop`` (None: the ``nnx_sow_capture_noop`` config value).
        """
        variable_type = _as_variable_type(variable_type)
        captures = vars(self).get(CAPTURES)
        if captures is not None:
            slot = _capture_slot(captures, variable_type)
            if slot is None:
                return False
            stored = dict(slot.get_value())
            stored[name] = reduce_fn(stored[name] if name in stored else init_fn(), value)
            slot.set_value(stored)
            return True
        if _outside_capture("sow", capture_noop):
            return False
        if name in vars(self):
            existing = vars(self)[name]
            if not isinstance(existing, Variable):
                raise ValueError(f"Expected '{name}' to be a Variable, got {type(existing).__name__}")
            if type(existing) is not variable_type:  # exactly the type, as flax's
                raise ValueError(
                    f"Expected '{name}' of {type(self).__name__} to be of type '{variable_type.__name__}', "
                    f"got '{type(existing).__name__}'"
                )
            existing.set_value(reduce_fn(existing.get_value(), value))
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        return True

    def perturb(
        self,
        name: str,
        value: tp.Any,
        variable_type: type[Variable[tp.Any]] | str = Perturbation,
        capture_noop: bool | None = None,
    ) -> tp.Any:
        """Returns ``value`` plus the perturbation stored under ``name`` (zeros at first);
        outside :func:`capture` with ``capture_noop``, just ``value``."""
        variable_type = _as_variable_type(variable_type)
        captures = vars(self).get(CAPTURES)
        if captures is not None:
            slot = _capture_slot(captures, variable_type)
            if slot is None:
                return value
            stored = dict(slot.get_value())
            if name not in stored:
                stored[name] = jnp.zeros_like(value)
                slot.set_value(stored)
            return value + stored[name]
        if _outside_capture("perturb", capture_noop):
            return value
        if name not in vars(self):
            setattr(self, name, variable_type(jnp.zeros_like(value)))
        existing = vars(self)[name]
        if not isinstance(existing, variable_type):
            raise ValueError(
                f"Expected '{name}' to be of type '{variable_type.__name__}', got '{type(existing).__name__}'"
            )
        return existing.get_value() + value

    def iter_modules(self) -> tp.Iterator[tuple[PathParts, Module]]:
        """Deprecated alias of :func:`iter_modules` (warns when iterated)."""
        _warn_deprecated_method("iter_modules")
        yield from iter_modules(self)

    def iter_children(self) -> tp.Iterator[tuple[tp.Hashable, tp.Any]]:
        """Deprecated alias of ``iter_children``: the immediate child nodes and Variables (warns when iterated)."""
        _warn_deprecated_method("iter_children")
        yield from graphlib.iter_children(self)

    def set_attributes(
        self, *filters: tp.Any, raise_if_not_found: bool = True, graph: bool | None = None, **attributes: tp.Any
    ) -> None:
        """Sets ``attributes`` on this Module and nested Modules (matching ``filters``) that have them."""
        _set_attributes(self, filters, raise_if_not_found, graph, attributes)

    def train(self, **attributes: tp.Any) -> None:
        """Sets ``deterministic=False`` and ``use_running_average=False`` where those attributes exist."""
        self.set_attributes(deterministic=False, use_running_average=False, **attributes, raise_if_not_found=False)

    def eval(self, **attributes: tp.Any) -> None:
        """Sets ``deterministic=True`` and ``use_running_average=True`` where those attributes exist."""
        self.set_attributes(deterministic=True, use_running_average=True, **attributes, raise_if_not_found=False)


def _outside_capture(method: str, capture_noop: bool | None) -> bool:
    """Whether ``method`` called outside :func:`capture` does nothing; if it does something,
    that use is deprecated and warns."""
    if SOW_CAPTURE_NOOP.value if capture_noop is None else capture_noop:
        return True
    warnings.warn(
        f"Using 'Module.{method}()' outside of 'nnx.capture()' is deprecated; see\n"
        "        https://flax.readthedocs.io/en/latest/guides/extracting_intermediates.html for more information.\n"
        "        ",
        DeprecationWarning,
        stacklevel=3,
    )
    return False


def _warn_deprecated_method(name: str) -> None:
    warnings.warn(
        f"The 'm.{name}()' method is deprecated; use the 'nnx.{name}(m)' function instead.",
        DeprecationWarning,
        stacklevel=3,
    )


def _matching_modules(node: tp.Any, filters: tp.Sequence[tp.Any], graph: bool | None) -> list[tuple[PathParts, Module]]:
    predicates = [to_predicate(f) for f in filters]
    return [
        (path, m)
        for path, m in iter_modules(node, graph=graph)
        if not predicates or any(p(path, m) for p in predicates)
    ]


def _set_attributes(
    node: tp.Any,
    filters: tp.Sequence[tp.Any],
    raise_if_not_found: bool,
    graph: bool | None,
    attributes: dict[str, tp.Any],
) -> None:
    remaining = set(attributes)
    for _, module in _matching_modules(node, filters, graph):
        for name, value in attributes.items():
            if hasattr(module, name):
                remaining.discard(name)
                setattr(module, name, value)
    if remaining and raise_if_not_found:
        raise ValueError(f"Could not find at least one instance of the following attributes: {sorted(remaining)}")


def iter_modules(module: tp.Any, /, *, graph: bool | None = None) -> tp.Iterator[tuple[PathParts, Module]]:
    """Every nested Module of ``module``, including itself, as ``(path, module)`` (children first)."""
    for path, node in graphlib.iter_graph(module, graph=graph):
        if isinstance(node, Module):
            yield path, node


def _shallow_copy(node: A, graph: bool | None) -> A:
    """A new graph with new Pytrees but the same Variables."""
    gdef, state = graphlib.split(node, graph=graph)
    return graphlib.merge(gdef, state)


def with_attributes(
    node: A, /, *, only: tp.Any = ..., raise_if_not_found: bool = True, graph: bool | None = None, **attributes: tp.Any
) -> A:
    """A copy of ``node`` (sharing its Variables) with ``attributes`` set on the matching Modules."""
    new = _shallow_copy(node, graph)
    _set_attributes(new, (only,), raise_if_not_found, graph, attributes)
    return new


def _view_parameters(cls: type) -> list[inspect.Parameter]:
    set_view = getattr(cls, "set_view", None)
    if set_view is None:
        return []
    return [
        p for p in inspect.signature(set_view).parameters.values() if p.name != "self" and p.kind is not p.VAR_KEYWORD
    ]


def view(
    node: A, /, *, only: tp.Any = ..., raise_if_not_found: bool = True, graph: bool | None = None, **kwargs: tp.Any
) -> A:
    """A copy of ``node`` (sharing its Variables) where matching Modules ran ``set_view(**kwargs)``."""
    new = _shallow_copy(node, graph)
    used: set[str] = set()
    for _, module in _matching_modules(new, (only,), graph):
        if not hasattr(type(module), "set_view"):
            continue
        parameters = inspect.signature(module.set_view).parameters.values()  # type: ignore[attr-defined]
        if any(p.kind is p.VAR_KEYWORD for p in parameters):  # it takes every keyword, as flax passes them
            accepted = dict(kwargs)
        else:
            names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            accepted = {k: v for k, v in kwargs.items() if k in names}
        module.set_view(**accepted)  # type: ignore[attr-defined]
        used.update(accepted)
    unused = set(kwargs) - used
    if unused and raise_if_not_found:
        raise ValueError(f"Unused keys found in nnx.view: {sorted(unused)}")
    return new


def _arg_docs(doc: str) -> dict[str, list[str]]:
    """``{name: [first line, later lines...]}`` from the ``Args:`` section of a docstring, read
    as flax reads it: the section runs to the next unindented line (the newline before that
    line ends the last entry); an entry is a line indented by exactly two spaces, named by
    what precedes its first colon; every other line of the section, blank ones too, goes as
    it is to the entry before it."""
    _, found, after = inspect.cleandoc(doc).partition("Args:")
    if not found:
        return {}
    section = re.split(r"^(?=\S)", after, maxsplit=1, flags=re.MULTILINE)[0]
    docs: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in section.split("\n"):
        if line.startswith("  ") and not line.startswith("   ") and ":" in line:
            name, _, text = line[2:].partition(":")
            current = docs[name] = [f"    {text.strip()}"]
        elif current is not None:
            current.append(line)
    return docs


def view_info(node: Module, /, *, only: tp.Any = ..., graph: bool | None = None) -> str:
    """The ``set_view`` arguments of each Module type in ``node``, with their documentation
    (KeyError for an argument its docstring leaves out, as flax); a ``set_view`` without a
    docstring is shown by its signature."""
    classes = {type(m) for _, m in _matching_modules(node, (only,), graph) if hasattr(type(m), "set_view")}
    blocks = []
    for cls in sorted(classes, key=lambda c: c.__qualname__):
        set_view = cls.set_view  # type: ignore[attr-defined]
        lines = [f"{cls.__qualname__}:"]
        if set_view.__doc__ is None:
            lines.append(f"  set_view{inspect.signature(set_view)}")
        else:
            docs = _arg_docs(set_view.__doc__)
            for p in _view_parameters(cls):
                default = "" if p.default is p.empty else f" = {p.default}"
                lines.append(f"  {p.name}: {p.annotation}{default}")
                lines.extend(docs[p.name])
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


CAPTURES = "__captures__"


def _capture_slot(captures: tuple[Variable[tp.Any], ...], variable_type: type) -> Variable[tp.Any] | None:
    """The capture Variable collecting ``variable_type`` values, if that type is captured."""
    for slot in captures:
        if type(slot) is variable_type:
            return slot
    return None


def capture(
    fn: tp.Any,
    *var_types: type[Variable[tp.Any]],
    init: State | None = None,
    method_outputs: type[Variable[tp.Any]] | None = None,
) -> tp.Any:
    """Wraps ``fn`` so it returns ``(result, *states)``: what Modules sowed/perturbed per Variable type.

    While ``fn`` runs, every Module under the target holds a ``__captures__`` data attribute:
    one Variable per captured type whose value is a dict ``{name: value}`` (seeded from
    ``init``); ``sow`` and ``perturb`` write there, and the dicts become the returned States.
    """
    if isinstance(fn, type) and issubclass(fn, Variable):
        types = (fn, *var_types)
        return lambda f: capture(f, *types, init=init, method_outputs=method_outputs)
    collected = tuple(var_types) + ((method_outputs,) if method_outputs and method_outputs not in var_types else ())

    @functools.wraps(fn)
    def wrapper(*args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        if isinstance(fn, Module):
            target, call = fn, lambda *a, **k: fn(*a, **k)
        elif inspect.ismethod(fn) and isinstance(fn.__self__, Module):
            target, call = fn.__self__, fn  # the method as bound before: its own output is not recorded, as flax's
        else:
            target, call = (args[0] if args else None), fn
        modules = list(iter_modules(target))
        _install_captures(modules, collected, init)
        restore = _wrap_methods(modules, method_outputs) if method_outputs else []
        try:
            result = call(*args, **kwargs)
        finally:
            for cls, name, original in reversed(restore):
                setattr(cls, name, original)
            items = _remove_captures(modules)
        if not collected:
            return result
        return (result, *_sort_captured(items, collected))

    return wrapper


def _sort_captured(items: list[tuple[PathParts, Variable[tp.Any]]], collected: tuple[type, ...]) -> list[State]:
    """One State per captured type. Values of a captured type (not those only seeded by
    ``init``) go to the first type they are an instance of, as filters match: a
    Perturbation lands with Intermediate when that comes first."""
    groups: list[list[tuple[PathParts, Variable[tp.Any]]]] = [[] for _ in collected]
    for path, value in items:
        if type(value) in collected:
            groups[next(i for i, t in enumerate(collected) if isinstance(value, t))].append((path, value))
    return [from_flat_state(FlatState(group)) for group in groups]


def _install_captures(modules: list[tuple[PathParts, Module]], collected: tuple[type, ...], init: State | None) -> None:
    seeds = list(to_flat_state(init)) if init is not None else []
    types = list(dict.fromkeys([*collected, *(type(v) for _, v in seeds if isinstance(v, Variable))]))
    for path, module in modules:
        slots = tuple(t({}) for t in types)
        for seed_path, seed in seeds:
            if tuple(seed_path[:-1]) == path:
                slot = _capture_slot(slots, type(seed))
                if slot is not None:
                    slot.get_raw_value()[seed_path[-1]] = seed.get_value() if isinstance(seed, Variable) else seed
        module._setattr(CAPTURES, data(slots))


def _remove_captures(modules: list[tuple[PathParts, Module]]) -> list[tuple[PathParts, Variable[tp.Any]]]:
    """Removes the ``__captures__`` attributes and returns their entries as ``(path, Variable)``."""
    items: list[tuple[PathParts, Variable[tp.Any]]] = []
    for path, module in modules:
        _structure.touched(module)
        slots = vars(module).pop(CAPTURES, ())
        module._pytree__nodes.pop(CAPTURES, None)
        for slot in slots:
            for name, value in slot.get_value().items():
                items.append(((*path, name), type(slot)(value)))
    return items


_BASE_METHODS = frozenset(dir(Module))


def _wrap_methods(
    modules: list[tuple[PathParts, Module]], variable_type: type[Variable[tp.Any]]
) -> list[tuple[type, str, tp.Any]]:
    """Makes the public methods (and ``__call__``) that each Module's own class defines sow
    their output, as flax does: an inherited method sows only where its defining class is
    among the Modules' classes, List's methods never do, and a callable class attribute
    (a jitted method) counts as a method. Module's own methods are left alone (they sow).

    Returns ``(class, name, original)`` triples for the caller to undo.
    """
    restore: list[tuple[type, str, tp.Any]] = []
    for cls in dict.fromkeys(type(m) for _, m in modules if m._records_method_outputs):
        for name, method in list(vars(cls).items()):
            public = name == "__call__" or not name.startswith("_")
            if not public or (cls is Module and name in _BASE_METHODS) or not _is_method(method):
                continue
            restore.append((cls, name, method))
            setattr(cls, name, _sowing(method, name, variable_type))
    return restore


def _is_method(value: tp.Any) -> bool:
    """Whether a class attribute is called with the instance first: a function or another
    callable object, not a class, static or class method."""
    return callable(value) and not isinstance(value, (type, staticmethod, classmethod))


def _sowing(
    method: tp.Callable[..., tp.Any], name: str, variable_type: type[Variable[tp.Any]]
) -> tp.Callable[..., tp.Any]:
    @functools.wraps(method)
    def wrapped(self: Module, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        out = method(self, *args, **kwargs)
        self.sow(variable_type, name, out)
        return out

    return wrapped
