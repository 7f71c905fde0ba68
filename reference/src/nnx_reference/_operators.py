"""The Python operators of Variables: each hands its arguments to the value's own method.

flax 0.12.12's Variables define no ``__bool__`` (truth goes through ``__len__``), no ordering
comparison, ``!=`` or ``divmod`` (its hijax Variables have ``divmod``), round to 0 digits by
default, and refuse in-place operators (``variable[...] += x`` is the supported form).
"""

from __future__ import annotations

import typing as tp

from . import _hijax


def value_of(x: tp.Any) -> tp.Any:
    """A Variable's value (a traced hijax one's too); anything else as it is."""
    return x.get_value() if isinstance(x, ValueOperators) else x


def _delegated(name: str) -> tp.Callable[..., tp.Any]:
    """A Variable operator that hands its arguments to the same method of the value, as
    flax's do: a value without that method raises its own ``AttributeError``."""

    def method(self: ValueOperators, *args: tp.Any) -> tp.Any:
        return getattr(self.get_value(), name)(*args)

    method.__name__ = name
    return method


def _binary(name: str) -> tp.Callable[..., tp.Any]:
    """A binary Variable operator: the value's own, given the other operand's value."""

    def method(self: ValueOperators, other: tp.Any) -> tp.Any:
        return getattr(self.get_value(), name)(value_of(other))

    method.__name__ = name
    return method


def _builtin(function: tp.Callable[[tp.Any], tp.Any]) -> tp.Callable[..., tp.Any]:
    """A Variable protocol method that applies a builtin (``len``, ``iter``) to the value."""
    return lambda self: function(self.get_value())


def _inplace(name: str) -> tp.Callable[..., tp.Any]:
    """An in-place operator, refused: it would rebind the name to the value's result."""

    def method(self: ValueOperators, other: tp.Any) -> tp.NoReturn:
        raise NotImplementedError(
            f"In-place operations are no longer supported for Variable.\nUse `variable[...] {name} x` instead."
        )

    return method


class ValueOperators(metaclass=_hijax.VariableMeta):
    """Operators of a Variable, on its ``get_value()`` (a mixin of ``Variable``)."""

    get_value: tp.Callable[[], tp.Any]  # the Variable's

    __len__, __iter__ = _builtin(len), _builtin(iter)

    def __contains__(self, item: tp.Any) -> bool:
        return item in self.get_value()  # type: ignore[operator]

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        return self.get_value()(*args, **kwargs)  # type: ignore[operator]

    __float__, __int__, __complex__ = _delegated("__float__"), _delegated("__int__"), _delegated("__complex__")
    __index__ = _delegated("__index__")
    __floor__, __ceil__, __trunc__ = _delegated("__floor__"), _delegated("__ceil__"), _delegated("__trunc__")

    def __round__(self, ndigits: int = 0) -> tp.Any:
        return self.get_value().__round__(ndigits)  # type: ignore[union-attr]

    __add__, __radd__ = _binary("__add__"), _binary("__radd__")
    __sub__, __rsub__ = _binary("__sub__"), _binary("__rsub__")
    __mul__, __rmul__ = _binary("__mul__"), _binary("__rmul__")
    __truediv__, __rtruediv__ = _binary("__truediv__"), _binary("__rtruediv__")
    __floordiv__, __rfloordiv__ = _binary("__floordiv__"), _binary("__rfloordiv__")
    __mod__, __rmod__ = _binary("__mod__"), _binary("__rmod__")
    __pow__, __rpow__ = _binary("__pow__"), _binary("__rpow__")
    __matmul__, __rmatmul__ = _binary("__matmul__"), _binary("__rmatmul__")
    __and__, __rand__ = _binary("__and__"), _binary("__rand__")
    __or__, __ror__ = _binary("__or__"), _binary("__ror__")
    __xor__, __rxor__ = _binary("__xor__"), _binary("__rxor__")
    __lshift__, __rlshift__ = _binary("__lshift__"), _binary("__rlshift__")
    __rshift__, __rrshift__ = _binary("__rshift__"), _binary("__rrshift__")
    __eq__ = _binary("__eq__")  # type: ignore[assignment]
    __neg__, __pos__ = _delegated("__neg__"), _delegated("__pos__")
    __abs__, __invert__ = _delegated("__abs__"), _delegated("__invert__")
    # flax's hijax Variables have ``divmod`` too: added to the hijax twins
    _hijax_operators: tp.ClassVar[dict[str, tp.Callable[..., tp.Any]]] = {
        "__divmod__": _binary("__divmod__"),
        "__rdivmod__": _binary("__rdivmod__"),
    }
    __iadd__, __isub__, __imul__ = _inplace("+="), _inplace("-="), _inplace("*=")
    __itruediv__, __ifloordiv__ = _inplace("/="), _inplace("//=")
    __imod__, __ipow__, __imatmul__ = _inplace("%="), _inplace("**="), _inplace("@=")
    __iand__, __ior__, __ixor__ = _inplace("&="), _inplace("|="), _inplace("^=")
    __ilshift__, __irshift__ = _inplace("<<="), _inplace(">>=")
