"""NNX transforms: JAX transforms lifted to accept graph nodes (Modules, Variables).

Each transform converts its graph arguments to pure trees, runs the JAX
transform, and writes Variable (and, in graph mode, structural) updates back
to the caller's objects, exactly as if the function had run eagerly.
"""

from ._partial_jit import jit_partial
from .autodiff import DiffState, grad, jvp, remat, value_and_grad, vjp
from .compilation import StateSharding, jit, shard_map
from .custom_gradients import custom_vjp
from .general import checkify, cond, eval_shape, make_jaxpr, switch
from .iteration import Carry, StateAxes, fori_loop, pmap, transform_metadata, vmap, while_loop
from .scanning import scan

__all__ = [
    "Carry",
    "DiffState",
    "StateAxes",
    "StateSharding",
    "checkify",
    "cond",
    "custom_vjp",
    "eval_shape",
    "fori_loop",
    "grad",
    "jit",
    "jit_partial",
    "jvp",
    "make_jaxpr",
    "pmap",
    "remat",
    "scan",
    "shard_map",
    "switch",
    "transform_metadata",
    "value_and_grad",
    "vjp",
    "vmap",
    "while_loop",
]
