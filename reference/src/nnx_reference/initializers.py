"""``nnx.initializers``: the same module object as ``nnx.nn.initializers``.

Importing ``nnx_reference.initializers`` hands back ``nnx_reference.nn.initializers``
itself, so both names always refer to one module.
"""

import sys

from nnx_reference.nn import initializers as _initializers

sys.modules[__name__] = _initializers
