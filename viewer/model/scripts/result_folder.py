"""A finished worker run's folder, read on demand: the recordings the app has not needed yet.

At the end of a run the app reads the folder's small parts (``result.json``, the pass log, the
samples) and the recording of the graph it shows; every other graph's recording (the head
trace ``trace.npz``, a kept pass's segment) stays in the folder until the user selects that
graph. A :class:`ResultFolder` owns the folder from then on: it reads each recording once
(:meth:`ResultFolder.head`, :meth:`ResultFolder.segment`), deletes the file once read (the
trace is kept, the file is no longer needed: one file holds one recording, so a file that
held several would go only once all of them were read), and removes the folder when released
(:meth:`ResultFolder.release`) or when nothing refers to it any longer (the
:class:`~viewer.model.scripts.run.ScriptResult` holding it was replaced or dropped, or the app
quits).

While a folder is in use its owner holds a shared ``flock`` on it (:func:`hold_folder`), so
:func:`viewer.model.scripts.process.remove_stale_folders` never removes it, whatever its age
and wherever its owner's process is seen from (:func:`folder_in_use`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import weakref

from autodiff.trace import TraceReader, trace_from_npz
from viewer.model.scripts.result_schema import SEGMENT_NAME, TRACE_NAME

__all__ = ["ResultFolder", "folder_in_use", "hold_folder"]

try:
    import fcntl
except ImportError:  # not a POSIX system: folders are told apart by their owner's pid only
    fcntl = None  # type: ignore[assignment]


def hold_folder(path: str) -> int:
    """A descriptor holding a shared lock on the folder ``path`` while it is open (-1 where
    the system has no ``flock``). Not inherited by a child process."""
    if fcntl is None:
        return -1
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return -1
    return fd


def folder_in_use(path: str) -> bool:
    """Whether some process holds ``path`` with :func:`hold_folder` (False where unknown)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the test lock, if it was taken
    return False


def _remove(path: str, lock: int) -> None:
    if lock >= 0:
        with contextlib.suppress(OSError):
            os.close(lock)
    shutil.rmtree(path, ignore_errors=True)


class ResultFolder:
    """The folder ``path`` of a finished run, holding recordings not read yet.

    ``has_head``: the folder holds the run's head trace (``trace.npz``). ``lock``: the
    descriptor of :func:`hold_folder`, closed with the folder. A recording that is missing or
    cannot be read is an :class:`OSError` or :class:`ValueError` naming its file and what is
    wrong with it; nothing is cached then, so a later call tries again."""

    def __init__(self, path: str, has_head: bool = True, lock: int = -1) -> None:
        self.path = path
        self.has_head = has_head
        self._traces: dict[str, TraceReader] = {}
        self._lock = threading.Lock()  # the supervising thread reads first, the GUI's later
        self._finalizer = weakref.finalize(self, _remove, path, lock)

    @property
    def released(self) -> bool:
        return not self._finalizer.alive

    def release(self) -> None:
        """Remove the folder now (the recordings read so far stay readable)."""
        self._finalizer()

    def head(self) -> TraceReader | None:
        """The run's head trace (None: the run sent none)."""
        return self._read(TRACE_NAME) if self.has_head else None

    def segment(self, number: int) -> TraceReader:
        """The recording of the kept pass whose segment is ``number``."""
        return self._read(SEGMENT_NAME.format(number))

    def loaded_head(self) -> TraceReader | None:
        """The head trace if it was read already (never reads)."""
        return self._traces.get(TRACE_NAME)

    def loaded_segment(self, number: int) -> TraceReader | None:
        """Segment ``number`` if it was read already (never reads)."""
        return self._traces.get(SEGMENT_NAME.format(number))

    def _read(self, name: str) -> TraceReader:
        with self._lock:
            trace = self._traces.get(name)
            if trace is not None:
                return trace
            if self.released:
                raise FileNotFoundError(
                    f"{name} is gone: the run's folder was removed ({self.path})"
                )
            path = os.path.join(self.path, name)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{name} is missing from the run's folder ({self.path})")
            try:
                trace = trace_from_npz(path)
            except Exception as e:  # a damaged file: whatever the reader found wrong
                raise ValueError(f"{name} could not be read: {type(e).__name__}: {e}") from e
            self._traces[name] = trace
            with contextlib.suppress(OSError):
                os.remove(path)  # read for good: its trace is kept as long as this folder
            return trace
