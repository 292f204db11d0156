"""How Cancel stops a script, and where it waits.

Cancel raises :class:`ScriptCancelled` in the script's thread wherever it is: from the
worker's SIGTERM handler, from an engine observer, or as an asynchronous exception
(:mod:`viewer.model.scripts.run`). The run's own bookkeeping runs on that thread too (a
pass's log entry and its kept graph, the swap to a new recording), and an exception that
splits it leaves the sample inconsistent: a pass logged whose graph was never kept while the
pass before it was already dropped, or a recording begun and never known. A
:class:`Bookkeeping` section holds the Cancel back: one that comes while in it is raised as
the outermost section ends, with the state whole.

The recorders' own per-operation code (the engine's observer, torch's dispatch handler and
hooks) is not made of sections: that would cost every operation. The worker's SIGTERM handler
looks at where the signal landed instead (:func:`in_recording`) and, there, asks again a few
milliseconds later (:mod:`viewer.model.scripts.worker`).
"""

from __future__ import annotations

import os
from types import FrameType

__all__ = ["Bookkeeping", "ScriptCancelled", "in_recording"]


class ScriptCancelled(BaseException):
    """Raised inside a script when its run is cancelled (a BaseException, so a script's
    ``except Exception`` does not swallow it)."""


class Bookkeeping:
    """``with bookkeeping:`` a section of the run's own state that a Cancel must not split.

    Whoever delivers a Cancel asks :meth:`hold` first: True means the section has taken it
    and raises it at its end (so the deliverer must not raise it now)."""

    __slots__ = ("depth", "pending")

    def __init__(self) -> None:
        self.depth = 0
        self.pending = False

    def __enter__(self) -> Bookkeeping:
        self.depth += 1
        return self

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        self.depth -= 1
        if self.depth == 0 and self.pending:
            self.pending = False
            if kind is None:  # (an exception already on its way stops the script anyway)
                raise ScriptCancelled("the script was cancelled")

    def hold(self) -> bool:
        """A Cancel comes: True if a section is running, which then raises it as it ends."""
        if self.depth > 0:
            self.pending = True
            return True
        return False


def _recorder_places() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The folders and files whose code is the run's recording, not the script's: the
    engine's and torch's recorders, the run's pass bookkeeping, the Function sampler, and
    torch's dispatch-mode entry and exit (a mode half entered breaks its flags)."""
    from autodiff import trace

    here = os.path.dirname(os.path.abspath(__file__))
    checks = os.path.join(os.path.dirname(here), "checks")
    folders = (os.path.dirname(os.path.abspath(trace.__file__)) + os.sep,)
    files = (
        os.path.join(here, "pass_recording.py"),
        os.path.join(here, "torch_passes.py"),
        os.path.join(here, "cancelling.py"),
        os.path.join(checks, "function_check.py"),
        os.path.join(checks, "torch_check.py"),
    )
    return folders, files


_DISPATCH_FILE = os.path.join("torch", "utils", "_python_dispatch.py")


def in_recording(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal landed) or a frame that called it runs the
    recording's code: an exception raised there would leave the recording half updated."""
    global _PLACES
    if _PLACES is None:
        _PLACES = _recorder_places()
    folders, files = _PLACES
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(folders) or name in files or name.endswith(_DISPATCH_FILE):
            return True
        frame = frame.f_back
    return False


_PLACES: tuple[tuple[str, ...], tuple[str, ...]] | None = None
