"""Progress and cancellation of a layout: the callables a caller passes to
:func:`~viewer.model.layout.layered.layered_layout` and the :class:`Ticker` every phase calls
between steps."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["LayoutCancelled", "Progress", "ShouldCancel", "Ticker"]

Progress = Callable[[float], None]
ShouldCancel = Callable[[], bool]


class LayoutCancelled(Exception):
    """The layout was stopped because ``should_cancel()`` returned True."""


class Ticker:
    """Reports progress and polls for cancellation."""

    def __init__(self, progress: Progress | None, should_cancel: ShouldCancel | None) -> None:
        self.progress, self.should_cancel = progress, should_cancel

    def tick(self, fraction: float | None = None) -> None:
        """Raise :class:`LayoutCancelled` if ``should_cancel()`` says so; else report
        ``fraction`` (clipped to 0..1), when given, to ``progress``."""
        if self.should_cancel is not None and self.should_cancel():
            raise LayoutCancelled("layout cancelled")
        if fraction is not None and self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)))
