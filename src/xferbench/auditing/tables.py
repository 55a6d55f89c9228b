"""Facts about tensors, keyed by identity and held weakly: the audit never keeps a tensor
alive, and an entry leaves with its tensor (so a later tensor at the same address is never
taken for it)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class TensorTable(Generic[V]):
    """``table[t] = value`` while ``t`` lives; ``table.get(t)`` is None once it is gone."""

    def __init__(self) -> None:
        #: id -> (weak reference, value); read directly where a method call costs too much
        self.entries: dict[int, tuple[weakref.ref[Any], V]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __setitem__(self, tensor: Any, value: V) -> None:
        key = id(tensor)
        entries = self.entries

        def gone(_ref: weakref.ref[Any], key: int = key) -> None:
            entry = entries.get(key)
            if entry is not None and entry[0] is _ref:
                del entries[key]

        entries[key] = (weakref.ref(tensor, gone), value)

    def get(self, tensor: Any) -> V | None:
        entry = self.entries.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return None
        return entry[1]

    def discard(self, tensor: Any) -> None:
        entry = self.entries.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            del self.entries[id(tensor)]

    def values(self) -> Iterator[V]:
        return (value for _ref, value in list(self.entries.values()))

    def clear(self) -> None:
        self.entries.clear()
