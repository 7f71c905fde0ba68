"""The implementation under test: loading it, the ``flax`` import alias, missing names.

Doc examples keep their ``from flax import nnx``; when the implementation is not
``flax.nnx``, :class:`ImportAlias` makes ``flax``, ``flax.nnx`` and every
``flax.nnx.<submodule>`` resolve to the implementation and its submodules, and
``flax.config`` to its package's ``config`` when it has one.
Hand-written tests take the implementation from the ``nnx`` fixture, an
:class:`ImplProxy` that turns a missing name into a failure naming it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

FLAX_NNX = "flax.nnx"
NO_FLAX = (
    "differential tests compare with the real flax.nnx (flax==0.12.12), which is not installed beside the"
    " implementation (nox -s conformance installs it; --yardstick none runs without it)"
)
NO_YARDSTICK = (
    "differential tests compare with the real flax.nnx (flax==0.12.12), and this run has none (--yardstick none)"
)
IMPORT_FAILURE = "cannot import the implementation"
"""How the suite's messages about an implementation that does not import begin."""


class MissingName(AttributeError):
    """An nnx name the implementation under test does not provide."""


@dataclass
class Implementation:
    """The module chosen with ``--impl``, or why it could not be imported."""

    name: str
    module: ModuleType | None
    error: str | None = None

    @classmethod
    def load(cls, name: str) -> Implementation:
        try:
            return cls(name, importlib.import_module(name))
        except BaseException as exc:  # an implementation may fail in any way on import
            if isinstance(exc, KeyboardInterrupt):
                raise
            return cls(name, None, "".join(traceback.format_exception(exc)))

    @property
    def import_failure(self) -> str:
        """The heading of the import failure, ``cannot import the implementation 'name'``."""
        return f"{IMPORT_FAILURE} {self.name!r}"

    @property
    def import_failure_line(self) -> str:
        """The import failure in one line: the heading and the traceback's last line."""
        return f"{self.import_failure}: {(self.error or '').strip().splitlines()[-1]}"

    def version(self) -> str | None:
        """The version of the distribution that provides the implementation."""
        if self.module is not None and isinstance(getattr(self.module, "__version__", None), str):
            return self.module.__version__
        top = self.name.partition(".")[0]
        for dist in importlib.metadata.packages_distributions().get(top, []):
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None


def missing_message(module_name: str, impl_name: str, attr: str) -> str:
    """The failure message for ``attr`` missing from ``module_name`` (the impl or a submodule)."""
    relative = module_name[len(impl_name) :]
    return f"{module_name} has no attribute '{attr}' (nnx{relative}.{attr})"


def _in_impl(module_name: str, impl_name: str) -> bool:
    return module_name == impl_name or module_name.startswith(impl_name + ".")


def missing_name(exc: BaseException, impl_name: str) -> str | None:
    """If ``exc`` says that the implementation lacks a name, the message naming it."""
    if isinstance(exc, MissingName):
        return str(exc)
    if isinstance(exc, AttributeError) and isinstance(getattr(exc, "obj", None), ModuleType):
        module_name = exc.obj.__name__
        if _in_impl(module_name, impl_name) and exc.name:
            return missing_message(module_name, impl_name, exc.name)
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.startswith(FLAX_NNX + "."):
        parent, _, attr = exc.name.rpartition(".")
        return missing_message(impl_name + parent[len(FLAX_NNX) :], impl_name, attr)
    if isinstance(exc, ImportError) and exc.name and getattr(exc, "name_from", None) and _in_impl(exc.name, impl_name):
        return missing_message(exc.name, impl_name, exc.name_from)
    return None


class ImplProxy:
    """The implementation module as tests see it: a missing name fails with its name."""

    def __init__(self, module: ModuleType, impl_name: str) -> None:
        self._module = module
        self._impl_name = impl_name

    def __getattr__(self, name: str) -> Any:
        try:
            value = getattr(self._module, name)
        except AttributeError:
            raise MissingName(missing_message(self._module.__name__, self._impl_name, name)) from None
        if isinstance(value, ModuleType) and _in_impl(value.__name__, self._impl_name):
            return ImplProxy(value, self._impl_name)
        return value

    def __dir__(self) -> list[str]:
        return dir(self._module)

    def __repr__(self) -> str:
        return f"<implementation under test {self._module.__name__}>"


class _AliasLoader(importlib.abc.Loader):
    """Loads ``flax.nnx.<sub>`` as the implementation's own ``<sub>`` module."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._original_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._target)
        self._original_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the alias spec on the real module: give it back its own.
        module.__spec__ = self._original_spec


class OutsideNnx(ModuleType):
    """A ``flax`` module outside ``flax.nnx`` (``flax.traverse_util``) while another
    implementation is under test: a page's import of it succeeds, any use of it fails."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"{self.__name__} is outside flax.nnx, which is all the import alias "
            f"provides: {self.__name__}.{name} is not part of the spec"
        )


class _OutsideNnxLoader(importlib.abc.Loader):
    """Loads a ``flax.<module>`` outside ``flax.nnx`` as an :class:`OutsideNnx` placeholder."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return OutsideNnx(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        pass


def implementation_config(impl: ModuleType) -> Any | None:
    """What ``flax.config`` is under the alias: the ``config`` attribute of the package the
    implementation belongs to (``mylib.config`` for ``mylib.nnx``), if it has one."""
    return getattr(sys.modules[impl.__name__.partition(".")[0]], "config", None)


class ImportAlias(importlib.abc.MetaPathFinder):
    """Makes ``flax`` and ``flax.nnx[.<submodule>]`` import as the implementation (and any
    other ``flax.<module>`` as an :class:`OutsideNnx` placeholder)."""

    def __init__(self, impl: ModuleType) -> None:
        self._impl = impl
        self._saved: dict[str, ModuleType] = {}
        self.installed = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("flax.") and fullname.count(".") == 1 and fullname != FLAX_NNX:
            return importlib.machinery.ModuleSpec(fullname, _OutsideNnxLoader())
        if not fullname.startswith(FLAX_NNX + "."):
            return None
        real = self._impl.__name__ + fullname[len(FLAX_NNX) :]
        try:
            found = importlib.util.find_spec(real)
        except ImportError:
            return None
        if found is None:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(real), is_package=found.submodule_search_locations is not None
        )

    def install(self) -> None:
        for name in [n for n in sys.modules if n == "flax" or n.startswith("flax.")]:
            self._saved[name] = sys.modules.pop(name)
        package = ModuleType("flax", f"Import alias: flax.nnx is {self._impl.__name__}.")
        package.__path__ = []
        package.__spec__ = importlib.machinery.ModuleSpec("flax", None, is_package=True)
        package.nnx = self._impl  # type: ignore[attr-defined]
        config = implementation_config(self._impl)
        if config is not None:
            package.config = config  # type: ignore[attr-defined]
        sys.modules["flax"] = package
        sys.modules[FLAX_NNX] = self._impl
        sys.meta_path.insert(0, self)
        self.installed = True

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """Meanwhile ``flax`` imports resolve to the real flax again (if it is installed)."""
        self.uninstall()
        try:
            yield
        finally:
            self.install()

    def uninstall(self) -> None:
        if not self.installed:
            return
        sys.meta_path.remove(self)
        for name in [n for n in sys.modules if n == "flax" or n.startswith("flax.")]:
            del sys.modules[name]
        sys.modules.update(self._saved)
        self._saved.clear()
        self.installed = False


@dataclass(frozen=True)
class Yardstick:
    """The real ``flax.nnx`` beside the implementation under test: what differential tests compare with.

    While another implementation is under test, ``flax`` imports resolve to it, and
    flax's own code imports some of its modules at call time: every use of the real
    flax must therefore run inside :meth:`active`, which puts the real modules back.
    When flax.nnx itself is under test there is no alias, and flax is compared with
    itself: the tests' own claims about flax's behaviour are still checked.
    """

    nnx: ModuleType
    alias: ImportAlias | None

    @contextlib.contextmanager
    def active(self) -> Iterator[ModuleType]:
        with self.alias.suspended() if self.alias is not None else contextlib.nullcontext():
            yield self.nnx

    @classmethod
    def load(cls, impl: Implementation, alias: ImportAlias | None) -> Yardstick | str:
        """The real flax.nnx, imported with the alias suspended, or why there is none."""
        if impl.name == FLAX_NNX and impl.module is not None:
            return cls(impl.module, None)
        # PathFinder looks at sys.path only: the alias' ``flax`` in sys.modules does not count.
        if alias is None or importlib.machinery.PathFinder.find_spec("flax") is None:
            return NO_FLAX
        with alias.suspended():
            return cls(importlib.import_module(FLAX_NNX), alias)
