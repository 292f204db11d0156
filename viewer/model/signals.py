"""A tiny synchronous signal: the model's only way of telling views that something happened.

Event names are past tense (``graph_loaded``, ``step_changed``): a signal reports a fact, it
never asks for work. ``emit`` calls the connected slots at once, in connection order, on the
emitting thread. A model that is changed from a worker thread therefore emits on that thread;
the Qt side must hop to the GUI thread itself (a queued Qt signal) before touching widgets.

Bound methods are held weakly (through :class:`weakref.WeakMethod`), so connecting a view's
method does not keep the view alive: once the view is collected, its slot silently drops out.
Plain functions, lambdas and other callables are held strongly: disconnect them explicitly.
"""

from __future__ import annotations

import contextlib
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Signal"]


class Signal:
    """A list of slots called synchronously by :meth:`emit`.

    An exception raised by a slot propagates out of ``emit`` (the remaining slots are not
    called): a bug in a view must not be hidden by the model.
    """

    __slots__ = ("_blocked", "_slots", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._slots: list[Callable[[], Any] | weakref.WeakMethod] = []
        self._blocked = 0

    def connect(self, slot: Callable[..., Any]) -> Callable[..., Any]:
        """Call ``slot(*args)`` on every emit. Connecting the same slot twice is a no-op.

        Returns ``slot``, so ``connect`` works as a decorator.
        """
        if not callable(slot):
            raise TypeError(f"Signal {self.name!r}: {slot!r} is not callable")
        if self._index(slot) is None:
            if isinstance(slot, types.MethodType):
                self._slots.append(weakref.WeakMethod(slot))
            else:
                self._slots.append(slot)
        return slot

    def disconnect(self, slot: Callable[..., Any] | None = None) -> None:
        """Remove ``slot`` (or every slot when ``slot`` is None). Unknown slots are ignored."""
        if slot is None:
            self._slots.clear()
            return
        index = self._index(slot)
        if index is not None:
            del self._slots[index]

    def emit(self, *args: Any) -> None:
        if self._blocked:
            return
        dead = False
        # Iterate over a copy: a slot may connect or disconnect while we emit.
        for entry in tuple(self._slots):
            if isinstance(entry, weakref.WeakMethod):
                method = entry()
                if method is None:
                    dead = True
                    continue
                method(*args)
            else:
                entry(*args)
        if dead:
            self._slots = [
                s for s in self._slots if not (isinstance(s, weakref.WeakMethod) and s() is None)
            ]

    @contextlib.contextmanager
    def blocked(self) -> Iterator[None]:
        """Within the block, ``emit`` does nothing (for batched updates)."""
        self._blocked += 1
        try:
            yield
        finally:
            self._blocked -= 1

    def receivers(self) -> int:
        """How many live slots are connected."""
        return sum(
            1 for s in self._slots if not (isinstance(s, weakref.WeakMethod) and s() is None)
        )

    def __repr__(self) -> str:
        return f"<Signal {self.name!r} slots={self.receivers()}>"

    def _index(self, slot: Callable[..., Any]) -> int | None:
        for i, entry in enumerate(self._slots):
            target = entry() if isinstance(entry, weakref.WeakMethod) else entry
            if target is not None and (target is slot or target == slot):
                return i
        return None
