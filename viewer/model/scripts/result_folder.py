"""A finished worker run's folder, read on demand: the recordings the app has not needed yet.

At the end of a run the app reads the folder's small parts (``result.json``, the pass log, the
samples) and the recording of the graph it shows; every other graph's recording (the head
trace ``trace.npz``, a kept pass's segment) stays in the folder until the user selects that
graph. The worker writes those after the result, so the graph shows sooner: a recording
selected before its file is there is waited for (until ``recordings.done`` says the worker
wrote all it could, or the worker ended).

A :class:`ResultFolder` owns the folder from then on: it reads each recording once
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
import time
import weakref
from collections.abc import Callable

from autodiff.trace import TraceReader, trace_from_npz
from viewer.model.scripts.result_schema import RECORDINGS_DONE_NAME, SEGMENT_NAME, TRACE_NAME

__all__ = ["WAIT_S", "ResultFolder", "folder_in_use", "hold_folder"]

# A recording the worker is still writing is waited for at most this long (it writes them
# one after another, the largest in well under a second)
WAIT_S = 120.0

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
    # Moved aside first: the worker may still be writing recordings into it (it writes the
    # graphs not shown after the result), and a file it starts after this fails rather than
    # appearing in a folder being removed (which would then stay behind).
    gone = f"{path}.gone"
    try:
        os.rename(path, gone)
    except OSError:
        gone = path
    shutil.rmtree(gone, ignore_errors=True)


class ResultFolder:
    """The folder ``path`` of a finished run, holding recordings not read yet.

    ``has_head``: the folder holds the run's head trace (``trace.npz``). ``lock``: the
    descriptor of :func:`hold_folder`, closed with the folder. A recording that is missing or
    cannot be read is an :class:`OSError` or :class:`ValueError` naming its file and what is
    wrong with it; nothing is cached then, so a later call tries again."""

    def __init__(
        self,
        path: str,
        has_head: bool = True,
        lock: int = -1,
        writing: Callable[[], bool] | None = None,
    ) -> None:
        self.path = path
        self.has_head = has_head
        # whether the worker may still be writing recordings into the folder (it writes the
        # graphs not shown after the result): a file not there yet is waited for meanwhile
        self._writing = writing
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

    def _wait_for(self, path: str) -> None:
        """Until ``path`` is there, the worker has written all it will, or it ended."""
        writing = self._writing
        if writing is None:
            return
        done = os.path.join(self.path, RECORDINGS_DONE_NAME)
        deadline = time.monotonic() + WAIT_S
        while not os.path.isfile(path) and not os.path.isfile(done):
            if not writing() or time.monotonic() > deadline:
                return
            time.sleep(0.01)

    def _not_written(self, name: str) -> str | None:
        """Why the worker did not write ``name``, when it said (None: it did not say)."""
        try:
            with open(os.path.join(self.path, RECORDINGS_DONE_NAME), encoding="utf-8") as f:
                said = f.read(4096)
        except OSError:
            return None
        for why in said.split("; "):
            if why.startswith(f"{name}: "):
                return f"{name} could not be written by the script's worker: {why[len(name) + 2 :]}"
        return None

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
                self._wait_for(path)
            if not os.path.isfile(path):
                why = self._not_written(name)
                raise FileNotFoundError(
                    why or f"{name} is missing from the run's folder ({self.path})"
                )
            try:
                trace = trace_from_npz(path)
            except Exception as e:  # a damaged file: whatever the reader found wrong
                raise ValueError(f"{name} could not be read: {type(e).__name__}: {e}") from e
            self._traces[name] = trace
            with contextlib.suppress(OSError):
                os.remove(path)  # read for good: its trace is kept as long as this folder
            return trace
