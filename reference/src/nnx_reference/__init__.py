"""nnx_reference: an independent, readable JAX implementation of the flax.nnx API.

The public namespace mirrors ``flax.nnx``: each area module declares its public
names in ``__all__`` and they are re-exported here, so ``nnx_reference.split`` is
``nnx_reference.graphlib.split`` just as ``flax.nnx.split`` is
``flax.nnx.graphlib.split``. The submodules the documentation names
(``graphlib``, ``variablelib``, ``rnglib``, ...) are importable under the same names.
"""

from . import (
    compat as compat,
)
from . import (
    extract as extract,
)
from . import (
    filterlib as filterlib,
)
from . import (
    graphlib as graphlib,
)
from . import (
    helpers as helpers,
)
from . import (
    module as module,
)
from . import (
    nn as nn,
)
from . import (
    pytreelib as pytreelib,
)
from . import (
    rnglib as rnglib,
)
from . import (
    spmd as spmd,
)
from . import (
    statelib as statelib,
)
from . import (
    summary as summary,
)
from . import (
    tracers as tracers,
)
from . import (
    training as training,
)
from . import (
    transforms as transforms,
)
from . import (
    traversals as traversals,
)
from . import (
    variablelib as variablelib,
)
from . import (
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
