"""nnx_reference: an independent, readable JAX implementation of the flax.nnx API.

The public namespace mirrors ``flax.nnx``: each area module declares its public
names in ``__all__`` and they are re-exported here, so ``nnx_reference.split`` is
``nnx_reference.graphlib.split`` just as ``flax.nnx.split`` is
``flax.nnx.graphlib.split``. The submodules the documentation names
(``graphlib``, ``variablelib``, ``rnglib``, ...) are importable under the same names.
"""

from . import (
    compat as compat,
    extract as extract,
    filterlib as filterlib,
    graphlib as graphlib,
    helpers as helpers,
    module as module,
    nn as nn,
    pytreelib as pytreelib,
    rnglib as rnglib,
    spmd as spmd,
    statelib as statelib,
    summary as summary,
    tracers as tracers,
    training as training,
    transforms as transforms,
    traversals as traversals,
    variablelib as variablelib,
    visualization as visualization,
)
from ._config import config as config
from .extract import *  # noqa: F403
from .filterlib import *  # noqa: F403
from .graphlib import *  # noqa: F403
from .helpers import *  # noqa: F403
from .module import *  # noqa: F403
from .nn import *  # noqa: F403
from .pytreelib import *  # noqa: F403
from .rnglib import *  # noqa: F403
from .spmd import *  # noqa: F403
from .statelib import *  # noqa: F403
from .summary import *  # noqa: F403
from .training import *  # noqa: F403
from .transforms import *  # noqa: F403
from .variablelib import *  # noqa: F403
from .variablelib import old_name as __getattr__  # noqa: F401 (``VariableState``, with flax's warning)
from .visualization import *  # noqa: F403

#: ``config`` holds the NNX options of ``flax.config`` (``config.update("nnx_sow_capture_noop", True)``).
#: The documentation also reaches these modules under their older names.
graph = graphlib
object = pytreelib

__version__ = "0.1.0"

