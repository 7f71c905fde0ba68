"""The public API surface of an NNX implementation, as JSON-ready data, and how to
compare two surfaces.

A surface maps every public name of the module (``dir`` without leading underscores)
to an entry: its kind (``class``, ``function``, ``module`` or ``data``), for functions
the parameters, for classes the ``__init__`` parameters and the public methods and
properties. A parameter records its name, kind and, if it has one, the ``repr`` of its
default (memory addresses removed) and whether that default is a plain literal.
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
from typing import Any

Entry = dict[str, Any]

LITERAL_TYPES = (type(None), bool, int, float, str, type(Ellipsis))
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _is_literal(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_is_literal(item) for item in value)
    return type(value) in LITERAL_TYPES


def parameters(obj: Any, drop_first: bool = False) -> list[Entry] | None:
    """The parameters of a callable, or None when Python cannot tell them."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    result = []
    for parameter in list(signature.parameters.values())[1 if drop_first else 0 :]:
        entry: Entry = {"name": parameter.name, "kind": parameter.kind.name}
        if parameter.default is not inspect.Parameter.empty:
            entry["default"] = _ADDRESS.sub("", repr(parameter.default))
            entry["literal"] = _is_literal(parameter.default)
        result.append(entry)
    return result


def _is_typing_construct(obj: Any) -> bool:
    return isinstance(obj, types.GenericAlias) or type(obj).__module__ in ("typing", "typing_extensions")


def kind_of(obj: Any) -> str:
    """``module``, ``class``, ``function`` (anything else callable) or ``data``."""
    if isinstance(obj, types.ModuleType):
        return "module"
    if _is_typing_construct(obj):
        return "data"
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "data"


def _members(cls: type) -> dict[str, Entry]:
    members: dict[str, Entry] = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(cls, name)
        if isinstance(static, property):
            members[name] = {"kind": "property"}
        elif isinstance(static, (staticmethod, classmethod)) or inspect.isfunction(static):
            members[name] = {"kind": "method", "parameters": parameters(getattr(cls, name))}
    return members


def describe(obj: Any) -> Entry:
    """The surface entry of one public object."""
    kind = kind_of(obj)
    entry: Entry = {"kind": kind}
    if kind == "function":
        entry["parameters"] = parameters(obj)
    elif kind == "class":
        own_init = any("__init__" in vars(base) for base in obj.__mro__[:-1])
        entry["init"] = parameters(obj.__init__, drop_first=True) if own_init else []  # object() takes none
        entry["members"] = _members(obj)
    return entry


def surface(module: Any) -> dict[str, Entry]:
    """Every public name of ``module`` and its entry, sorted by name."""
    return {name: describe(getattr(module, name)) for name in sorted(dir(module)) if not name.startswith("_")}


UNDOCUMENTED_MODULES = (
    "deprecations",
    "extract",
    "helpers",
    "module",
    "object",
    "proxy_caller",
    "pytreelib",
    "reprlib",
    "statelib",
    "summary",
    "tracers",
    "training",
    "transforms",
    "visualization",
)
"""Submodules of flax.nnx that no documentation page or docstring names as ``nnx.<name>``."""

EXCLUDED: dict[str, str] = {
    "bridge": "Linen interoperability, out of the suite's scope",
    "wrappers": "flax.nnx.bridge.wrappers, Linen interoperability, out of the suite's scope",
    "A": "a type variable of flax's own annotations, not an API",
    "M": "a type variable of flax's own annotations, not an API",
    **dict.fromkeys(UNDOCUMENTED_MODULES, "flax's internal module layout: the documentation never names it"),
}
"""Public names of flax.nnx that the suite does not require, with the reason."""

UNSHOWN_CONSTRUCTORS: dict[str, str] = {
    "GraphDef": "made by nnx.split and nnx.graphdef; its API entry shows no signature",
    "SplitContext": "made by nnx.split_context; no page shows or documents its constructor",
    "MergeContext": "made by nnx.merge_context; no page shows or documents its constructor",
    "UpdateContext": "made by nnx.update_context; its API entry shows no signature",
}
"""Classes the documentation hands out but never builds nor documents the constructor of:
the constructor's parameters (flax's own index maps) are no documented parameters."""


def dump(module_name: str) -> dict[str, Any]:
    """The surface of an importable module, with the module's name and version."""
    module = importlib.import_module(module_name)
    top = importlib.import_module(module_name.partition(".")[0])
    return {"module": module_name, "version": getattr(top, "__version__", None), "names": surface(module)}


def _is_private_option(parameter: Entry) -> bool:
    """An underscore-named parameter with a default or keyword-only: not public API."""
    return parameter["name"].startswith("_") and ("default" in parameter or parameter["kind"] == "KEYWORD_ONLY")


def parameter_problems(where: str, expected: list[Entry] | None, actual: list[Entry] | None) -> list[str]:
    """How ``actual`` parameters fail to accept every call that ``expected`` accepts.

    Positional parameters match in order: a positional-only one by kind (its name is not
    part of the API; a positional-or-keyword one accepts the same calls), a
    positional-or-keyword one by name and kind. Keyword-only parameters match by name
    (keyword-only or positional-or-keyword). ``*args`` and ``**kwargs`` are kept, extra
    parameters are optional, literal defaults are equal, and a parameter with a default
    keeps one. Underscore-named options are private and not compared.
    """
    if expected is None:  # the spec's signature could not be read: nothing to compare
        return []
    expected = [p for p in expected if not _is_private_option(p)]
    if actual is None:
        return [f"{where}: its signature cannot be read, expected {[p['name'] for p in expected]}"] if expected else []
    problems = []
    of_kind = lambda params, *kinds: [p for p in params if p["kind"] in kinds]  # noqa: E731
    want_pos = of_kind(expected, "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    got_pos = of_kind(actual, "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    for index, want in enumerate(want_pos):
        got = got_pos[index] if index < len(got_pos) else None
        if want["kind"] == "POSITIONAL_ONLY":
            ok = got is not None
        else:
            ok = got is not None and (got["name"], got["kind"]) == (want["name"], want["kind"])
        if not ok:
            shown = f"{got['name']} ({got['kind']})" if got else "nothing"
            problems.append(
                f"{where}: positional parameter {index} is {shown}, expected {want['name']} ({want['kind']})"
            )
    problems += [
        f"{where}: extra required parameter {p['name']}" for p in got_pos[len(want_pos) :] if "default" not in p
    ]
    want_kw = {p["name"] for p in of_kind(expected, "KEYWORD_ONLY")}
    got_kw = {p["name"] for p in of_kind(actual, "KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD")}
    problems += [f"{where}: missing keyword parameter {name}" for name in sorted(want_kw - got_kw)]
    problems += [
        f"{where}: extra required keyword-only parameter {p['name']}"
        for p in of_kind(actual, "KEYWORD_ONLY")
        if p["name"] not in want_kw and "default" not in p
    ]
    for star, mark in (("VAR_POSITIONAL", "*"), ("VAR_KEYWORD", "**")):
        if of_kind(expected, star) and not of_kind(actual, star):
            problems.append(f"{where}: missing {mark}{of_kind(expected, star)[0]['name']}")
    got_by_name = {p["name"]: p for p in actual}
    for want in expected:
        got = got_by_name.get(want["name"])
        if got is None or "default" not in want or want["kind"] == "POSITIONAL_ONLY":
            continue
        if "default" not in got:
            problems.append(f"{where}: parameter {want['name']} has no default, expected {want['default']}")
        elif want["literal"] and got["default"] != want["default"]:
            problems.append(
                f"{where}: parameter {want['name']} defaults to {got['default']}, expected {want['default']}"
            )
    return problems


def problems(name: str, expected: Entry, actual: Entry) -> list[str]:
    """Every way in which ``actual`` is not compatible with ``expected`` (empty if none).
    A ``data`` name (a constant or a typing alias) only has to exist; a function may be
    implemented by a class."""
    if expected["kind"] == "data":
        return []
    if expected["kind"] != actual["kind"] and not (expected["kind"] == "function" and actual["kind"] == "class"):
        return [f"{name} is a {actual['kind']}, expected a {expected['kind']}"]
    if expected["kind"] == "function":
        got = actual["parameters"] if actual["kind"] == "function" else actual["init"]
        return parameter_problems(name, expected.get("parameters"), got)
    if expected["kind"] != "class":
        return []
    found = parameter_problems(f"{name}.__init__", expected["init"], actual["init"])
    for member, want in expected["members"].items():
        got = actual["members"].get(member)
        if got is None:
            found.append(f"{name}.{member} is missing (a {want['kind']})")
        elif got["kind"] != want["kind"]:
            found.append(f"{name}.{member} is a {got['kind']}, expected a {want['kind']}")
        elif want["kind"] == "method":
            found += parameter_problems(f"{name}.{member}", want["parameters"], got["parameters"])
    return found
