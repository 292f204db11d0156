"""autodiff-viewer: see and step through backpropagation on any autodiff graph.

``viewer.show(*variables)`` opens the desktop app on graphs built in your own code;
``viewer.model`` is everything the app needs that is not Qt; ``viewer.app.main`` is the
``autodiff-viewer`` command. Importing ``viewer`` imports no Qt: ``show`` loads it on first use.
"""

from typing import Any

__all__ = ["show"]


def show(*variables: Any, block: bool | None = None, **options: Any) -> list[Any]:
    """Open the viewer on the graphs behind ``variables`` (Variables or recorded Traces).

    Blocks like ``plt.show()`` in a script until the windows are closed; returns at once where
    a Qt event loop already runs (IPython after ``%gui qt``). See :mod:`viewer.show`.
    """
    from viewer.show import show as show_graphs

    # Importing the submodule made ``viewer.show`` the module: put this function back.
    globals()["show"] = _show
    return show_graphs(*variables, block=block, **options)


_show = show
