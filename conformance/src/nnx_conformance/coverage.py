"""Which public names of the implementation each test exercises, and which documented
parameters it passes a value other than the default.

A :class:`Recorder` watches, with :mod:`sys.monitoring` (a tool id of the suite's own),
the start of the implementation's public functions and of its public classes'
``__new__``, ``__init__``, ``__call__``, methods and property getters: nothing else is
instrumented, and jit-compiled code runs no Python, so the hot path stays untouched. A
location stops reporting (``sys.monitoring.DISABLE``) once it has nothing new to tell
for the running test; each test starts with every location on again. What a test
exercised travels on its teardown report (as the suite's test info does), so that
xdist's controller collects its workers' records in a :class:`Collected`.

A code object shared by several public classes (an inherited method) is credited to the
nearest public class in the method order of its ``self`` (or ``cls``). A public name
whose implementation has no Python code of its own (a function re-exported from jax,
compiled by ``jax.jit``; a marker class) cannot be watched: the tests that name it in
their ``apis`` (marker, or a doc example's names) stand for it, and the report says so.
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from collections.abc import Generator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import pytest

from .items import in_suite
from .surface import EXCLUDED, LITERAL_TYPES, UNSHOWN_CONSTRUCTORS

TOOL_NAME = "nnx-conformance"
RECORD_ATTRIBUTE = "nnx_conformance_coverage"
"""The attribute of a suite test's teardown report that carries what the test exercised."""

RECORDER_PLUGIN = "nnx-conformance-coverage-recorder"
COLLECTED_PLUGIN = "nnx-conformance-coverage"

IDLE_CALLS = 8
"""Calls of a location that teach nothing new, after which it is off until the next test."""

WATCHED_DUNDERS = ("__new__", "__init__", "__call__")
_NO_DEFAULT = inspect.Parameter.empty
_VARIADIC = ("VAR_POSITIONAL", "VAR_KEYWORD")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("nnx-conformance")
    group.addoption(
        "--no-api-coverage",
        action="store_true",
        help="do not record which public names and documented parameters each test exercises",
    )


def spec_names() -> dict[str, dict[str, Any]]:
    """The public names of flax.nnx (``data/flax_api.json``) that coverage is counted for:
    functions and classes that the suite does not exclude."""
    names = json.loads(resources.files("nnx_conformance").joinpath("data", "flax_api.json").read_text())["names"]
    return {
        name: entry for name, entry in names.items() if entry["kind"] in ("function", "class") and name not in EXCLUDED
    }


def documented_parameters(name: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A function's parameters or a class's ``__init__`` parameters, underscore-named options
    aside (none for a class in :data:`~nnx_conformance.surface.UNSHOWN_CONSTRUCTORS`)."""
    if name in UNSHOWN_CONSTRUCTORS:
        return []
    found = entry.get("parameters") if entry["kind"] == "function" else entry.get("init")
    return [p for p in found or [] if not p["name"].startswith("_")]


@dataclass(frozen=True)
class Parameter:
    """A documented parameter as the implementation's frame holds it: in the local ``local``
    (None: only in the ``**`` local ``extra``, by name), with the implementation's default."""

    name: str
    kind: str
    local: str | None
    extra: str | None
    default: Any = _NO_DEFAULT

    def varied(self, frame_locals: dict[str, Any]) -> bool:
        """Whether the call passed this parameter a value other than its default."""
        if self.local is None:
            passed = frame_locals.get(self.extra) if self.extra else None
            return isinstance(passed, dict) and self.name in passed
        value = frame_locals.get(self.local, _NO_DEFAULT)
        if self.kind in _VARIADIC:
            return bool(value)
        return self.default is _NO_DEFAULT or not _is_default(value, self.default)


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    if isinstance(value, tuple) and isinstance(default, tuple):
        return len(value) == len(default) and all(map(_is_default, value, default))
    return type(value) is type(default) and type(value) in LITERAL_TYPES and value == default


def _bind(documented: list[dict[str, Any]], function: types.FunctionType, drop_first: bool) -> tuple[Parameter, ...]:
    """The documented parameters, found among ``function``'s (by name; positional-only ones by place)."""
    own = list(inspect.signature(function).parameters.values())[1 if drop_first else 0 :]
    by_name = {p.name: p for p in own}
    positional = [p for p in own if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    extra = next((p.name for p in own if p.kind is p.VAR_KEYWORD), None)
    bound = []
    for index, spec in enumerate(documented):
        found = by_name.get(spec["name"])
        if found is None and spec["kind"] == "POSITIONAL_ONLY" and index < len(positional):
            found = positional[index]
        if found is None:
            bound.append(Parameter(spec["name"], spec["kind"], None, extra))
        else:
            bound.append(Parameter(spec["name"], spec["kind"], found.name, extra, found.default))
    return tuple(bound)


@dataclass(frozen=True)
class Owner:
    """A public name served by a watched code object: a function, or a method of class ``cls``;
    ``parameters`` are the documented ones that this code's frame holds."""

    name: str
    cls: type | None
    parameters: tuple[Parameter, ...] = ()


@dataclass
class Target:
    """A watched code object and the public names it serves."""

    code: types.CodeType
    owners: list[Owner] = field(default_factory=list)

    def owners_for(self, frame_locals: dict[str, Any]) -> list[Owner]:
        """The owners a call credits: for a method, the nearest public class of its first argument."""
        if self.owners[0].cls is None or self.code.co_argcount == 0:
            return self.owners
        first = frame_locals.get(self.code.co_varnames[0])
        mro = (first if isinstance(first, type) else type(first)).__mro__
        by_class = {owner.cls: owner for owner in self.owners}
        nearest = next((by_class[cls] for cls in mro if cls in by_class), None)
        return [] if nearest is None else [nearest]


def _code_of(obj: Any, package: str) -> types.FunctionType | None:
    """The Python function behind ``obj``, if the implementation's package defines it."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    elif isinstance(obj, property):
        obj = obj.fget
    try:
        obj = inspect.unwrap(obj)
    except ValueError:
        return None
    if not isinstance(obj, types.FunctionType):
        return None
    module = getattr(obj, "__module__", None) or ""
    return obj if module == package or module.startswith(package + ".") else None


def targets(module: types.ModuleType, names: dict[str, dict[str, Any]]) -> dict[types.CodeType, Target]:
    """The code objects to watch in the implementation ``module``, for the public ``names``."""
    package = module.__name__.partition(".")[0]
    found: dict[types.CodeType, Target] = {}

    def add(function: types.FunctionType, owner: Owner) -> None:
        target = found.setdefault(function.__code__, Target(function.__code__))
        if owner not in target.owners:
            target.owners.append(owner)

    for name, entry in names.items():
        obj = getattr(module, name, None)
        if entry["kind"] == "function" or not inspect.isclass(obj):
            function = _code_of(obj, package)
            if function is not None:
                add(function, Owner(name, None, _bind(documented_parameters(name, entry), function, False)))
            continue
        for member in (*WATCHED_DUNDERS, *entry.get("members", {})):
            static = next((vars(cls)[member] for cls in obj.__mro__ if member in vars(cls)), None)
            function = _code_of(static, package)
            if function is None:
                continue
            parameters = _bind(documented_parameters(name, entry), function, True) if member == "__init__" else ()
            add(function, Owner(name, obj, parameters))
    return found


def watched_names(found: dict[types.CodeType, Target]) -> set[str]:
    """The public names that the ``found`` targets serve."""
    return {owner.name for target in found.values() for owner in target.owners}


@dataclass
class Exercised:
    """What one test exercised: public names, and documented parameters varied, by name."""

    names: set[str] = field(default_factory=set)
    varied: dict[str, set[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        varied = {name: sorted(found) for name, found in sorted(self.varied.items()) if found}
        return {"names": sorted(self.names), "varied": varied}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Exercised:
        return cls(set(data["names"]), {name: set(p) for name, p in data["varied"].items()})


class Recorder:
    """Watches the implementation's public code while each suite test runs (a pytest plugin)."""

    def __init__(self, module: types.ModuleType, names: dict[str, dict[str, Any]]) -> None:
        self.targets = targets(module, names)
        self.record: Exercised | None = None
        self._idle: dict[types.CodeType, int] = {}
        self.tool = next(tool for tool in range(5, -1, -1) if sys.monitoring.get_tool(tool) is None)
        sys.monitoring.use_tool_id(self.tool, TOOL_NAME)
        sys.monitoring.register_callback(self.tool, sys.monitoring.events.PY_START, self._started)
        for code in self.targets:
            sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.PY_START)

    def close(self) -> None:
        for code in self.targets:
            sys.monitoring.set_local_events(self.tool, code, 0)
        sys.monitoring.register_callback(self.tool, sys.monitoring.events.PY_START, None)
        sys.monitoring.free_tool_id(self.tool)

    def begin(self, record: Exercised | None) -> None:
        """Record into ``record`` from now on (None: record nothing), every location on again."""
        self.record = record
        self._idle.clear()
        sys.monitoring.restart_events()

    def _started(self, code: types.CodeType, offset: int) -> Any:
        record = self.record
        if record is None:
            return sys.monitoring.DISABLE
        target = self.targets[code]
        frame_locals = sys._getframe(1).f_locals
        learned = False
        for owner in target.owners_for(frame_locals):
            if owner.name not in record.names:
                record.names.add(owner.name)
                learned = True
            varied = record.varied.setdefault(owner.name, set())
            for parameter in owner.parameters:
                if parameter.name not in varied and parameter.varied(frame_locals):
                    varied.add(parameter.name)
                    learned = True
        only = target.owners[0] if len(target.owners) == 1 else None
        if only is not None and len(record.varied.get(only.name, ())) == len(only.parameters):
            return sys.monitoring.DISABLE  # the one name it serves is recorded, every parameter varied
        idle = 0 if learned else self._idle.get(code, 0) + 1
        self._idle[code] = idle
        return sys.monitoring.DISABLE if idle >= IDLE_CALLS else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        self.begin(Exercised() if in_suite(item) else None)
        try:
            return (yield)
        finally:
            self.record = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Attach the test's record to its teardown report, the last of its phases."""
        test_report = yield
        if call.when == "teardown" and self.record is not None:
            setattr(test_report, RECORD_ATTRIBUTE, self.record.to_dict())
        return test_report


@dataclass(eq=False)
class Collected:
    """The records of a run's tests by node id, from their teardown reports (a pytest plugin;
    in xdist's controller, the workers' reports)."""

    names: dict[str, dict[str, Any]]  # the public names, as :func:`spec_names` gives them
    watched: set[str]  # those whose code a :class:`Recorder` watches
    records: dict[str, Exercised] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, RECORD_ATTRIBUTE, None)
        if data is not None:
            self.records[report.nodeid] = Exercised.from_dict(data)


def start(config: pytest.Config, module: types.ModuleType) -> tuple[Recorder | None, Collected | None]:
    """Watch the implementation ``module`` where tests run (a worker, or a run without
    workers), collect the records where the report is built (not a worker); registered as
    plugins."""
    if config.getoption("no_api_coverage", False):
        return None, None
    names = spec_names()
    worker = hasattr(config, "workerinput")
    recorder = Recorder(module, names) if worker or getattr(config.option, "dist", "no") == "no" else None
    collected = None if worker else Collected(names, watched_names(targets(module, names)))
    for plugin, name in ((recorder, RECORDER_PLUGIN), (collected, COLLECTED_PLUGIN)):
        if plugin is not None:
            config.pluginmanager.register(plugin, name)
    return recorder, collected


def stop(config: pytest.Config, recorder: Recorder | None) -> None:
    """Stop watching, and unregister the plugins :func:`start` registered."""
    if recorder is not None:
        recorder.close()
    for name in (RECORDER_PLUGIN, COLLECTED_PLUGIN):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
