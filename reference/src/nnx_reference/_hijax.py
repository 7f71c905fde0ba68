"""Hijax Variables: Variables that JAX takes as one value of a type of their own.

A Variable built with ``hijax=True`` is an instance of its class's hijax twin, a
subclass named ``HijaxVariable`` (as flax names its hijax Variables) that is no pytree
but a ``jax.experimental.hijax`` type: ``jax.tree`` takes it as one leaf, and a JAX
transformation takes it as one input of type
:class:`AbstractVariable`, read by the :class:`GetVariable` primitive and built by the
:class:`NewVariable` primitive. Under a trace the function gets a tracer of that type,
which reads like the Variable (``v[...]``, arithmetic, metadata) and refuses writes.

NNX transforms hand a hijax Variable to JAX as a pytree, like any other Variable: the
plain class with ``hijax=True`` metadata (see :func:`lowered` and :func:`raised`).
"""

from __future__ import annotations

import operator
import typing as tp

import jax
import jax.numpy as jnp
from jax.experimental import hijax
from jax.extend.core import Primitive

from .errors import ImmutableVariableError

Variable = tp.Any
"""A Variable (``variablelib`` imports this module, so it is not imported back here)."""

_TWINS: dict[type, type] = {}
"""Each plain Variable class to its hijax twin and each twin to its plain class."""


def is_hijax(value: tp.Any) -> bool:
    """Whether ``value`` is a Variable of a hijax twin class."""
    return getattr(type(value), "_hijax", False)


def any_twin() -> bool:
    """Whether any hijax twin class exists yet (none does before the first hijax Variable)."""
    return bool(_TWINS)


def any_hijax(values: tp.Iterable[tp.Any]) -> bool:
    """Whether any of ``values`` is a hijax Variable (False at once before any hijax twin exists)."""
    return bool(_TWINS) and any(map(is_hijax, values))


def twin(cls: type, hijax_: bool) -> type:
    """``cls``'s hijax twin (``hijax_``) or plain class (otherwise)."""
    if cls._hijax == hijax_:  # type: ignore[attr-defined]
        return cls
    if cls not in _TWINS:
        _make_twin(cls)
    return _TWINS[cls]


def _make_twin(plain: type) -> None:
    namespace = {
        "__module__": plain.__module__,
        "__qualname__": "HijaxVariable",
        "_hijax": True,
        "type": property(lambda self: plain, doc="The type of the variable."),
        "var_type": property(lambda self: plain, doc="The type of the variable."),
        "__reduce__": lambda self: (_rebuild, (plain, self.__getstate__())),
        # one JAX value, not an array: compared and hashed by identity
        "__eq__": object.__eq__,
        "__ne__": object.__ne__,
        "__hash__": object.__hash__,
        **plain._hijax_operators,  # type: ignore[attr-defined]
    }
    cls = type("HijaxVariable", (plain,), namespace, hijax=True)
    _TWINS[plain], _TWINS[cls] = cls, plain
    hijax.register_hitype(cls, _type_of)


def _rebuild(plain: type, state: dict[str, tp.Any]) -> Variable:
    variable = object.__new__(twin(plain, True))
    variable.__setstate__(state)
    return variable


def _as(variable: Variable, cls: type) -> Variable:
    """A Variable of class ``cls`` sharing ``variable``'s value and metadata."""
    new = object.__new__(cls)
    for key, value in variable.__dict__.items():
        object.__setattr__(new, key, value)
    return new


def lowered(variable: Variable) -> Variable:
    """A hijax Variable as the pytree NNX transforms hand to JAX (others as they are)."""
    return _as(variable, _TWINS[type(variable)]) if is_hijax(variable) else variable


def raised(variable: Variable) -> Variable:
    """A pytree Variable with ``hijax=True`` metadata as a hijax Variable (others as they are)."""
    if is_hijax(variable) or not variable._var_metadata.get("hijax"):
        return variable
    return _as(variable, twin(type(variable), True))


def class_of(variable: tp.Any) -> type:
    """The class of a Variable; for a tracer of a hijax Variable, the hijax class it traces."""
    cls = type(variable)
    return twin(variable.aval.var_type, True) if issubclass(cls, jax.core.Tracer) else cls


def traces_a(instance: tp.Any, cls: type) -> bool:
    """Whether ``instance`` is a tracer of a hijax Variable of type ``cls`` (or a subclass)."""
    if not isinstance(instance, jax.core.Tracer):
        return False
    aval = instance.aval
    return isinstance(aval, AbstractVariable) and issubclass(aval.var_type, cls)


def traced(variable: Variable) -> tp.Any:
    """A hijax Variable whose value is traced, as a tracer of its type (as flax's
    constructor gives inside a JAX trace, so that the trace can return it); others as they are."""
    leaves = jax.tree_util.tree_leaves(lowered(variable))
    if not any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return variable
    return NewVariable(_type_of(variable))(*leaves)


_OPERANDS = Primitive("hijax_variable_operands")
"""An identity primitive: binding values runs them through JAX's canonicalization of operands."""
_OPERANDS.multiple_results = True
_OPERANDS.def_impl(lambda *operands: operands)


def canonical(value: tp.Any) -> tp.Any:
    """``value`` as a hijax Variable stores it, as flax's does: each leaf that is no JAX array
    or tracer as JAX takes a primitive's operand (NumPy arrays and Python or NumPy numbers as
    JAX's typed literals of its default dtypes; ``TypeError`` for what is no JAX type)."""
    if isinstance(value, jax.Ref):
        return value
    leaves, treedef = jax.tree_util.tree_flatten(value)
    loose = [i for i, leaf in enumerate(leaves) if not isinstance(leaf, jax.Array | jax.core.Tracer)]
    if not loose:
        return value
    with jax.ensure_compile_time_eval():
        typed = _OPERANDS.bind(*(leaves[i] for i in loose))
    for i, leaf in zip(loose, typed):
        leaves[i] = leaf
    return jax.tree_util.tree_unflatten(treedef, leaves)


class VariableMeta(type):
    """The metaclass of Variables, as flax's: a tracer of a hijax Variable is an instance of
    its Variable type, and a hijax Variable built inside a JAX trace is a tracer of one."""

    def __instancecheck__(cls, instance: tp.Any) -> bool:
        if cls.__dict__.get("_hijax"):  # flax gives all hijax Variables one class: any is an instance
            return is_hijax(instance) or traces_a(instance, object)
        return type.__instancecheck__(cls, instance) or traces_a(instance, cls)

    def __call__(cls, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        variable = type.__call__(cls, *args, **kwargs)
        return traced(variable) if variable._hijax else variable


# ---------------------------------------------------------------- the JAX type


def _type_of(variable: Variable) -> AbstractVariable:
    plain = lowered(variable)
    leaves, treedef = jax.tree_util.tree_flatten(plain)
    return AbstractVariable(type(plain), treedef, tuple(map(jax.typeof, leaves)))


def _get(value: tp.Any) -> tp.Any:
    """The value a hijax Variable (or a tracer of one) holds, read with :class:`GetVariable`."""
    ty = jax.typeof(value)
    return jax.tree_util.tree_unflatten(ty.value_treedef, GetVariable(ty)(value))


def _refuse(tracer: tp.Any, *args: tp.Any, **kwargs: tp.Any) -> tp.NoReturn:
    ty = jax.typeof(tracer)
    name = ty.var_type.__name__
    if dict(ty.metadata).get("ref"):
        # JAX cannot give a hi primitive's Ref output an effect of its caller's (flax 0.12.12
        # fails there with JAX's own ValueError about a JaxprInputEffect)
        raise ValueError(
            f"Cannot update a hijax {name} with ref=True inside a JAX transformation: JAX cannot write "
            "the Ref it holds from there. Update it outside, or pass it through an NNX transform."
        )
    raise ImmutableVariableError(
        f"Cannot update a non-ref hijax {name} inside JAX transformations. To mutate "
        "variables within jit, grad, scan, or other JAX transforms, use ref=True."
    )


def _get_value(tracer: tp.Any, *, index: tp.Any = Ellipsis) -> tp.Any:
    """The value (read out of its Ref, where it holds one), or ``value[index]``."""
    value = _get(tracer)
    return value if index is Ellipsis and not isinstance(value, jax.Ref) else value[index]


def _get_metadata(tracer: tp.Any, name: str | None = None, default: tp.Any = KeyError, **_: tp.Any) -> tp.Any:
    metadata = dict(jax.typeof(tracer).metadata)
    if name is None:
        return metadata
    if name not in metadata and default is KeyError:
        raise KeyError(name)
    return metadata.get(name, default)


def _binary(op: tp.Callable[[tp.Any, tp.Any], tp.Any], reflected: bool = False) -> tp.Any:
    if reflected:
        return staticmethod(lambda tracer, other: op(other, _get(tracer)))
    return staticmethod(lambda tracer, other: op(_get(tracer), other))


def _unary(op: tp.Callable[[tp.Any], tp.Any]) -> tp.Any:
    return staticmethod(lambda tracer: op(_get(tracer)))


_NOT_READ_THROUGH = frozenset({"shape", "dtype", "ndim", "size"})


class AbstractVariable(hijax.HiType):
    """The JAX type of a hijax Variable: its class, its metadata and its value's leaf types.

    ``treedef`` is the Variable's structure as a pytree (class, metadata, value);
    ``avals`` the types of its value's leaves, the values it lowers to.
    """

    def __init__(self, var_type: type, treedef: tp.Any, avals: tuple[tp.Any, ...]) -> None:
        self.var_type = var_type
        self.treedef = treedef
        self.avals = avals

    @property
    def type(self) -> type:
        return self.var_type

    @property
    def value_treedef(self) -> tp.Any:
        return self.treedef.children()[0]

    @property
    def metadata(self) -> tuple[tuple[str, tp.Any], ...]:
        return self.treedef.node_data()[1]

    def __getattr__(self, name: str) -> tp.Any:
        """A metadata entry by name; any other public name reads through to a tracer's value
        (``v.T`` inside ``jit``), as a Variable's attributes read through to its value, except
        the shape, dtype, ndim and size a tracer asks of its type (flax's tracer has none)."""
        if name.startswith("_") or name in _NOT_READ_THROUGH:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        for key, value in self.metadata:
            if key == name:
                return value
        return hijax.aval_property(lambda tracer: getattr(_get(tracer), name))

    def __hash__(self) -> int:
        return hash((self.var_type, self.treedef, self.avals))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractVariable) and (self.var_type, self.treedef, self.avals) == (
            other.var_type,
            other.treedef,
            other.avals,
        )

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return f"{self.var_type.__name__}()"

    def __repr__(self) -> str:
        return repr(jax.tree_util.tree_unflatten(self.treedef, self.avals))

    # -- lowering

    def lo_ty(self) -> list[tp.Any]:
        return list(self.avals)

    def lower_val(self, hi_val: Variable, /) -> list[tp.Any]:
        return jax.tree_util.tree_leaves(lowered(hi_val))

    def raise_val(self, *lo_vals: tp.Any) -> Variable:
        return raised(jax.tree_util.tree_unflatten(self.treedef, lo_vals))

    # -- autodiff

    def to_tangent_aval(self) -> AbstractVariable:
        return AbstractVariable(self.var_type, self.treedef, tuple(a.to_tangent_aval() for a in self.avals))

    def vspace_zero(self) -> Variable:
        return self.raise_val(*(jnp.zeros(a.shape, a.dtype) for a in self.avals))

    def vspace_add(self, x: Variable, y: Variable) -> Variable:
        return self.raise_val(*map(operator.add, self.lower_val(x), self.lower_val(y)))

    # -- what a tracer of this type does

    _getitem = staticmethod(lambda tracer, index: _get(tracer)[index])
    _setitem = staticmethod(_refuse)
    _len = staticmethod(lambda tracer: len(_get(tracer)))
    _iter = staticmethod(lambda tracer: iter(_get(tracer)))
    _bool = _unary(bool)
    _int = _unary(int)
    _float = _unary(float)
    _complex = _unary(complex)
    _index = _unary(operator.index)
    __jax_array__ = hijax.aval_method(_get)
    get_value = hijax.aval_method(_get_value)
    get_raw_value = hijax.aval_method(_get)
    set_value = hijax.aval_method(_refuse)
    set_raw_value = hijax.aval_method(_refuse)
    get_metadata = hijax.aval_method(_get_metadata)
    from_metadata = hijax.aval_method(
        lambda tracer, value, metadata: jax.typeof(tracer).var_type.from_metadata(value, metadata)
    )
    copy = hijax.aval_method(lambda tracer: tracer)

    _neg, _pos, _abs, _invert = _unary(operator.neg), _unary(operator.pos), _unary(abs), _unary(operator.invert)
    _add, _radd = _binary(operator.add), _binary(operator.add, True)
    _sub, _rsub = _binary(operator.sub), _binary(operator.sub, True)
    _mul, _rmul = _binary(operator.mul), _binary(operator.mul, True)
    _truediv, _rtruediv = _binary(operator.truediv), _binary(operator.truediv, True)
    _floordiv, _rfloordiv = _binary(operator.floordiv), _binary(operator.floordiv, True)
    _mod, _rmod = _binary(operator.mod), _binary(operator.mod, True)
    _divmod, _rdivmod = _binary(divmod), _binary(divmod, True)
    _pow, _rpow = _binary(operator.pow), _binary(operator.pow, True)
    _matmul, _rmatmul = _binary(operator.matmul), _binary(operator.matmul, True)
    _and, _rand = _binary(operator.and_), _binary(operator.and_, True)
    _or, _ror = _binary(operator.or_), _binary(operator.or_, True)
    _xor, _rxor = _binary(operator.xor), _binary(operator.xor, True)
    _lshift, _rlshift = _binary(operator.lshift), _binary(operator.lshift, True)
    _rshift, _rrshift = _binary(operator.rshift), _binary(operator.rshift, True)
    _round = staticmethod(lambda tracer, ndigits=0: _get(tracer).__round__(ndigits))
    # no comparisons: a tracer of a hijax Variable refuses them with AttributeError, as flax's


# ---------------------------------------------------------------- primitives


def _zeros_for(avals: tp.Iterable[tp.Any]) -> tuple[tp.Any, ...]:
    return tuple(hijax.Zero(a.to_tangent_aval()) for a in avals)


class GetVariable(hijax.HiPrim):
    """Reads the leaves of a hijax Variable's value."""

    def __init__(self, ty: AbstractVariable) -> None:
        self.in_avals = (ty,)
        self.out_aval = ty.avals
        self.params = dict(treedef=ty.treedef, avals=ty.avals, var_type=ty.var_type)
        super().__init__()

    def expand(self, variable: Variable) -> tuple[tp.Any, ...]:
        return tuple(jax.tree_util.tree_leaves(variable.get_raw_value()))

    def jvp(self, primals: tuple[tp.Any, ...], tangents: tuple[tp.Any, ...]) -> tuple[tp.Any, tp.Any]:
        (tangent,) = tangents
        ty = self.in_avals[0].to_tangent_aval()
        out_tangent = _zeros_for(self.out_aval) if isinstance(tangent, hijax.Zero) else GetVariable(ty)(tangent)
        return self(*primals), out_tangent

    def vjp_fwd(self, nzs_in: tp.Any, variable: tp.Any) -> tuple[tp.Any, None]:
        return self(variable), None

    def vjp_bwd_retval(self, res: None, out_ct: tuple[tp.Any, ...]) -> tuple[tp.Any]:
        ty = self.in_avals[0].to_tangent_aval()
        return (NewVariable(ty)(*(hijax.instantiate_zeros(ct) for ct in out_ct)),)

    def transpose(self, out_ct: tuple[tp.Any, ...], accum: tp.Any) -> None:
        """The cotangents of the leaves read, as a hijax Variable's (linear transposition)."""
        if hasattr(accum, "accum"):
            accum.accum(*self.vjp_bwd_retval(None, out_ct))


class NewVariable(hijax.HiPrim):
    """Builds a hijax Variable from the leaves of its value."""

    def __init__(self, ty: AbstractVariable) -> None:
        self.in_avals = ty.avals
        self.out_aval = ty
        self.params = dict(treedef=ty.treedef, var_type=ty.var_type, ref=bool(dict(ty.metadata).get("ref")))
        super().__init__()

    def expand(self, *leaves: tp.Any) -> Variable:
        return self.out_aval.raise_val(*leaves)

    def jvp(self, primals: tuple[tp.Any, ...], tangents: tuple[tp.Any, ...]) -> tuple[tp.Any, tp.Any]:
        ty = self.out_aval.to_tangent_aval()
        if all(isinstance(t, hijax.Zero) for t in tangents):
            return self(*primals), hijax.Zero(ty)
        return self(*primals), NewVariable(ty)(*(hijax.instantiate_zeros(t) for t in tangents))

    def vjp_fwd(self, nzs_in: tp.Any, *leaves: tp.Any) -> tuple[tp.Any, None]:
        return self(*leaves), None

    def vjp_bwd_retval(self, res: None, out_ct: tp.Any) -> tuple[tp.Any, ...]:
        if isinstance(out_ct, hijax.Zero):
            return _zeros_for(self.in_avals)
        return GetVariable(self.out_aval.to_ct_aval())(out_ct)

    def transpose(self, out_ct: tp.Any, *accums: tp.Any) -> None:
        """The cotangent of the Variable built, as the cotangents of its leaves (linear transposition)."""
        for leaf_ct, accum in zip(self.vjp_bwd_retval(None, out_ct), accums, strict=True):
            if hasattr(accum, "accum"):
                accum.accum(leaf_ct)


__all__ = [
    "AbstractVariable",
    "GetVariable",
    "NewVariable",
    "VariableMeta",
    "canonical",
    "is_hijax",
    "lowered",
    "raised",
    "twin",
]
