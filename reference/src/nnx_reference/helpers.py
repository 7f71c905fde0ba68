"""Container Modules: List, Dict and Sequential.

``List`` keeps its items in the instance dict under integer keys (so its pytree
paths are ``SequenceKey(i)``), ``Dict`` under their string keys; each item is data
or static by the usual :mod:`pytreelib` rules.
"""

from __future__ import annotations

import inspect
import typing as tp
from collections.abc import Iterable, MutableMapping, MutableSequence

from . import _structure, reprlib
from .module import Module
from .training.train_state import TrainState  # noqa: F401 (flax keeps it in nnx.helpers)

__all__ = ["Dict", "List", "Sequential"]

A = tp.TypeVar("A")


class List(Module, MutableSequence[A]):
    """A list Module: items that are data (arrays, Variables, Modules) become pytree children."""

    _records_method_outputs = False

    def __init__(self, items: tp.Iterable[A] = (), /) -> None:
        self._length = 0
        for item in items:
            self.append(item)

    def _index(self, index: int) -> int:
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"List index {index} out of range for a List of length {self._length}")
        return index

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: tp.Any) -> tp.Any:
        if isinstance(index, slice):
            return [self.__dict__[i] for i in range(self._length)[index]]
        return self.__dict__[self._index(index)]

    def __setitem__(self, index: tp.Any, value: tp.Any) -> None:
        """Sets one place, or the places of a slice to as many values (as flax: each place
        keeps its kind, so data set into a place holding a static value is a ValueError)."""
        if not isinstance(index, slice):
            self._setattr(self._index(index), value)
            return
        places, values = range(self._length)[index], list(value)
        if len(places) != len(values):
            raise ValueError("Length mismatch")
        for place, item in zip(places, values):
            self._setattr(place, item)

    def __delitem__(self, index: tp.Any) -> None:
        """Deletes one place, or those of a slice from the last one down (see :meth:`_delete`):
        flax's order for a positive step; for a negative one flax's ascending order
        removes other items, which the mutable-sequence contract rules out."""
        if not isinstance(index, slice):
            self._delete(self._index(index))
            return
        for place in sorted(range(self._length)[index], reverse=True):
            self._delete(place)

    def _delete(self, index: int) -> None:
        """Removes the place ``index``; each later item moves down one place, and the
        last place stays behind as an attribute past the List's length, as in flax
        0.12.12. An item moved into the removed place takes its own kind; moved into a
        place it keeps, the place's kind (data into a static place is a ValueError)."""
        _structure.touched(self)
        del self.__dict__[index]
        self._pytree__nodes.pop(index, None)
        for place in range(index + 1, self._length):
            self._setattr(place - 1, self.__dict__[place])
        self._length -= 1

    def insert(self, index: int, value: A) -> None:
        """As flax's: the last item is appended, each item from ``index`` on moves up one
        place, from the last down, and ``value`` takes place ``index``. A place keeps its
        kind: data moved into a place that holds a static value is a ValueError, raised
        with the places above it already moved."""
        place = min(max(index + self._length if index < 0 else index, 0), self._length)  # as list.insert
        items = list(self)
        items.insert(place, value)
        self.append(items[-1])
        for i in range(len(items) - 2, place - 1, -1):
            self._setattr(i, items[i])

    def append(self, value: A) -> None:
        self._setattr(self._length, value)
        self._length += 1

    def __iter__(self) -> tp.Iterator[A]:
        return (self.__dict__[i] for i in range(self._length))

    def __nnx_repr__(self, summarize: bool = True) -> str:
        if not self._length:
            return "List([])"
        lines = [f"  {reprlib.indent_tail(repr(x), '  ')}," for x in self]
        lines[-1] = lines[-1][:-1]
        return "\n".join(["List([", *lines, "])"])

    def __eq__(self, other: object) -> bool:
        """flax's: a List equals any List of exactly its type, whatever the items (so it has no hash)."""
        return True if type(other) is type(self) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Dict(Module, MutableMapping[str, A]):
    """A dict Module with string keys: values that are data (arrays, Variables, Modules) become
    pytree children; ``==`` compares items, as a Mapping's."""

    def __init__(self, *args: tp.Any, **kwargs: tp.Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __getitem__(self, key: str) -> A:
        if key not in self._keys():
            raise KeyError(key)
        return self.__dict__[key]  # type: ignore[no-any-return]

    def __setitem__(self, key: str, value: A) -> None:
        if not isinstance(key, str):  # flax keeps items as attributes
            raise TypeError(f"attribute name must be string, not '{type(key).__name__}'")
        self._setattr(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self._keys():
            raise KeyError(key)
        delattr(self, key)

    def _keys(self) -> list[str]:
        return [k for k, _ in self._pytree__items()]

    def __iter__(self) -> tp.Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __nnx_repr__(self, summarize: bool = True) -> str:
        return "Dict(" + reprlib.mapping_repr(dict(self.items()), repr) + ")"

    __hash__ = object.__hash__  # type: ignore[assignment]  # by identity, though == compares items as a Mapping's


class Sequential(Module, Iterable[tp.Callable[..., tp.Any]]):
    """Calls its layers in order, feeding each output to the next; an iterable of its layers
    (so ``Sequential[...]`` subscripts, as flax's)."""

    def __init__(self, *fns: tp.Callable[..., tp.Any]) -> None:
        self.layers = List(fns)

    def __call__(self, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        """Calls each layer on the previous one's output, as flax's: a tuple output is the next
        layer's positional arguments, a dict its keyword arguments, anything else its one
        argument; ``kwargs`` go to each layer that takes them beyond its positional ones.
        Without layers: the one argument, the arguments, the keyword arguments, or None."""
        if not self.layers:
            return args[0] if len(args) == 1 else args or kwargs or None
        output: tp.Any = None
        for i, layer in enumerate(self.layers):
            if not callable(layer):
                raise TypeError(f"Sequence[{i}] is not callable: {layer}")
            passed: dict[str, tp.Any] = {}
            if i > 0:
                if isinstance(output, tuple):
                    args = output
                elif isinstance(output, dict):
                    args, passed = (), dict(output)
                else:
                    args = (output,)
            accepted = _accepted_keywords(layer, len(args), kwargs) if kwargs else {}
            if repeated := set(passed) & set(accepted):
                raise TypeError(f"Got multiple values for arguments {repeated} in Sequential[{i}]")
            output = layer(*args, **passed, **accepted)
        return output

    def __iter__(self) -> tp.Iterator[tp.Callable[..., tp.Any]]:
        """The layers, in call order."""
        return iter(self.layers)


def _accepted_keywords(fn: tp.Callable[..., tp.Any], n_positional: int, kwargs: dict[str, tp.Any]) -> dict[str, tp.Any]:
    """The ``kwargs`` that ``fn`` takes by keyword once ``n_positional`` arguments are bound
    (all of them if it takes ``**kwargs``); none if its signature cannot be read."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        bound = {p.name for p in parameters[:n_positional] if p.kind is p.POSITIONAL_OR_KEYWORD}
        return {k: v for k, v in kwargs.items() if k not in bound}
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    free = {p.name for p in positional[n_positional:] if p.kind is p.POSITIONAL_OR_KEYWORD}
    free |= {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}
    return {k: v for k, v in kwargs.items() if k in free}
