"""The state of one suite run: settings, implementation, alias, pattern files, outcomes."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from . import devices, expectations, report
from .docsuite import DocSuite
from .impl import FLAX_NNX, ImportAlias, Implementation, Yardstick
from .items import ItemInfo, describe, doc_case
from .manifest import REGENERATE, Manifest
from .patterns import PatternFileError, PatternList
from .settings import Settings

KEY = pytest.StashKey["Suite"]()


@dataclass
class Suite:
    """Everything a suite run set up, and what it must undo."""

    settings: Settings
    impl: Implementation
    jax_env: devices.JaxEnvironment
    alias: ImportAlias | None
    expectations: PatternList
    docs: DocSuite
    infos: dict[str, ItemInfo] = field(default_factory=dict)
    outcomes: report.Outcomes = field(default_factory=report.Outcomes)
    _yardstick: Yardstick | str | None = None

    @classmethod
    def start(cls, config: pytest.Config) -> Suite:
        """Set JAX up, import the implementation, install the alias, read the spec."""
        settings = Settings.from_config(config)
        try:
            expected = PatternList.read(settings.expectations)
            defects = PatternList.read(settings.spec_defects)
        except (PatternFileError, OSError) as exc:
            raise pytest.UsageError(str(exc)) from None
        jax_env = devices.JaxEnvironment()
        jax_env.configure(settings.device)
        impl = Implementation.load(settings.impl)
        alias = None
        if impl.module is not None and impl.name != FLAX_NNX:
            alias = ImportAlias(impl.module)
            alias.install()
        manifest, problem = None, None
        if settings.spec_dir is None:
            problem = f"no docs_extracted/manifest.json found (use --spec-dir); {REGENERATE}"
        else:
            try:
                manifest = Manifest.read(settings.spec_dir)
            except (OSError, ValueError, KeyError) as exc:
                problem = f"cannot read the spec in {settings.spec_dir}: {exc!r}; {REGENERATE}"
        docs = DocSuite(manifest, problem, impl, defects, settings.run_defects)
        return cls(settings, impl, jax_env, alias, expected, docs)

    def stop(self) -> None:
        if self.alias is not None:
            self.alias.uninstall()
        self.jax_env.restore()

    def adopt(self, item: pytest.Item) -> None:
        """Describe a collected suite test; apply its skip for a spec defect and its expectation."""
        info = describe(item)
        self.infos[item.nodeid] = info
        case = doc_case(item)
        skip = case.skip() if case is not None else None
        if skip is not None:
            item.add_marker(pytest.mark.skip(reason=skip.reason))
        self.outcomes.expect(info, spec_defect=skip is not None and skip.spec_defect)
        expectations.apply(item, info.id, self.expectations)

    def yardstick(self) -> Yardstick | str:
        """The real flax.nnx for parity tests (imported on first use), or why there is none."""
        if self._yardstick is None:
            self._yardstick = Yardstick.load(self.impl, self.alias)
        return self._yardstick

    def versions(self) -> dict[str, str | None]:
        jax = sys.modules.get("jax")
        return {
            "python": platform.python_version(),
            "jax": getattr(jax, "__version__", None),
            "impl": self.impl.version(),
        }

    def build_report(self) -> dict[str, Any]:
        try:
            device = devices.describe()
        except Exception as exc:  # JAX itself may be what is broken
            device = f"unknown ({exc!r})"
        return report.build(self.outcomes, self.impl.name, self.versions(), device)
