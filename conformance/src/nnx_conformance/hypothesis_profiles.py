"""The hypothesis profiles of the suite: ``ci`` (the default), ``dev`` and ``thorough``.

Pick one with hypothesis' own option, ``pytest --hypothesis-profile dev``. ``ci`` is
derandomized (the same examples on every run, so a failure reproduces) and small: the
whole suite against one implementation stays within minutes on two CPU cores. ``dev``
and ``thorough`` draw more examples and keep the failing ones in :data:`DATABASE_DIR`.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

DEFAULT_PROFILE = "ci"
DATABASE_DIR = ".hypothesis/examples"
"""Where ``dev`` and ``thorough`` keep failing examples, relative to the working directory (git-ignored)."""

_SLOW_DRAWS = [HealthCheck.too_slow, HealthCheck.data_too_large]
"""Drawing an NNX graph builds JAX arrays, which hypothesis may find slow; that is expected."""

_EXPLORING = {"dev": 50, "thorough": 1000}
"""The profiles that draw new examples on every run, with their number of examples."""


def register_profiles() -> None:
    """Register the three profiles; loading one is left to the caller.

    Call it when the plugin module is imported, before hypothesis' pytest plugin reads
    ``--hypothesis-profile`` (a profile must be registered before it is loaded).
    """
    settings.register_profile(
        DEFAULT_PROFILE,
        max_examples=12,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=_SLOW_DRAWS,
    )
    for name, max_examples in _EXPLORING.items():
        settings.register_profile(
            name,
            max_examples=max_examples,
            deadline=None,
            database=DirectoryBasedExampleDatabase(DATABASE_DIR),
            suppress_health_check=_SLOW_DRAWS,
        )
