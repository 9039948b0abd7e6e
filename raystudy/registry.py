"""A name -> object registry with a helpful error for unknown names.

Datasets, splits, objectives, architectures, metrics and probes are each one of these, so a new
one is one file that registers itself.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


def unknown_name_message(kind: str, name: str, known: list[str]) -> str:
    """ "unknown objective 'x'; allowed: a, b (did you mean 'a'?)"."""
    msg = f"unknown {kind} {name!r}; allowed: {', '.join(sorted(known))}"
    close = difflib.get_close_matches(str(name), known, n=1)
    return msg + (f" (did you mean {close[0]!r}?)" if close else "")


class Registry(Generic[T]):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def wrap(item: T) -> T:
            if name in self._items and self._items[name] is not item:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = item
            return item

        return wrap

    def get(self, name: str) -> T:
        if name not in self._items:
            raise ValueError(unknown_name_message(self.kind, name, list(self._items)))
        return self._items[name]

    def unregister(self, name: str) -> None:
        del self._items[name]

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
