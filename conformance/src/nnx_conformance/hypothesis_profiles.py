"""The hypothesis profiles of the suite: ``ci`` (the default), ``dev`` and ``thorough``.

Pick one with hypothesis' own option, ``pytest --hypothesis-profile dev``. ``ci`` is
derandomized (the same examples on every run, so a failure reproduces) and small: the
whole suite against one implementation stays within minutes on two CPU cores.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

DEFAULT_PROFILE = "ci"
DATABASE_DIR = ".hypothesis/examples"
"""Where ``dev`` keeps failing examples, relative to the working directory (git-ignored)."""

_SLOW_DRAWS = [HealthCheck.too_slow, HealthCheck.data_too_large]
"""Drawing an NNX graph builds JAX arrays, which hypothesis may find slow; that is expected."""


def register_profiles() -> None:
    """Register the three profiles and load ``ci``; ``--hypothesis-profile`` overrides it.

    Call it when the plugin module is imported, before hypothesis' pytest plugin reads
    ``--hypothesis-profile`` (a profile must be registered before it is loaded).
    """
    settings.register_profile(
        "ci",
        max_examples=12,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=_SLOW_DRAWS,
    )
    settings.register_profile(
        "dev",
        max_examples=50,
        deadline=None,
        database=DirectoryBasedExampleDatabase(DATABASE_DIR),
        suppress_health_check=_SLOW_DRAWS,
    )
    settings.register_profile(
        "thorough",
        max_examples=1000,
        deadline=None,
        database=DirectoryBasedExampleDatabase(DATABASE_DIR),
        suppress_health_check=_SLOW_DRAWS,
    )
    settings.load_profile(DEFAULT_PROFILE)
