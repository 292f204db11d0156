"""Run a user's script in a worker interpreter of its own, as a notebook runs its kernel.

:class:`ScriptProcess` is what the app (and
:meth:`viewer.model.document.document.Document.run_script`)
uses: it starts a worker interpreter (:mod:`viewer.model.scripts.worker`) for one run and
hands back a :class:`~viewer.model.scripts.run.ScriptResult` built from data only: the
leak report, the output, the gradient check's samples, the graph list, and the recording of
the graph shown (:func:`autodiff.trace.trace_from_npz`); the other graphs' recordings stay in
the run's folder, which the result holds (a
:class:`~viewer.model.scripts.result_folder.ResultFolder`), until they are selected.

Whatever the script does (``os._exit``, a segfault, a MemoryError, a thread that never
ends, ``sys.stdout`` replaced, a signal handler of its own), the app's process is untouched,
and each way a worker can end is reported in one line.

* **Memory**: the worker's resident size is limited to ``memory_mb`` MiB (default
  :data:`DEFAULT_MEMORY_MB`, 800; 0: no limit): past it the script is stopped as by Cancel
  and the run fails with :func:`~viewer.model.scripts.worker.memory_message`. Its address
  space is limited too, as a backstop (see :mod:`viewer.model.scripts.worker`).
* **Output**: the worker's stdout and stderr are pipes (whatever thread or C code writes
  them, a crash report included); what comes reaches ``output_written`` in batches, at most
  every 50 ms or 64 KiB, and the result keeps up to 2 million characters of each.
* **Cancel** (:meth:`ScriptProcess.cancel`): the worker is asked to stop (SIGTERM: the script
  is interrupted where it is, even in a sleep) and sends what it built up to then; if it has
  not ended :data:`CANCEL_GRACE_S` later it is killed, with its whole process group, and the
  result keeps only the output.

The signals ``output_written(text)``, ``stage_changed(text)`` and ``finished(result)`` are
emitted on the run's supervising thread (or the caller's, for :meth:`run`): a Qt view must
queue them to the GUI thread.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from viewer.model.checks.problems import ProblemReport, Thresholds
from viewer.model.scripts.pass_sampling import DEFAULT_MAX_PASSES
from viewer.model.scripts.result_folder import ResultFolder, folder_in_use, hold_folder
from viewer.model.scripts.result_schema import (
    RESULT_NAME,
    SEGMENT_NONE,
    GraphRow,
    ResultMeta,
    read_meta,
    read_passes,
    read_samples,
)
from viewer.model.scripts.result_schema import _problems as _report_from_json
from viewer.model.scripts.run import (
    ScriptGraph,
    ScriptResult,
    _collect_graphs,
    _Flusher,
    _RunState,
    _ThreadStream,
)
from viewer.model.scripts.worker import (
    MEMORY_EXIT,
    MEMORY_EXIT_SENDING,
    MEMORY_SETTING,
    STOPPED_EXIT,
    memory_message,
)
from viewer.model.signals import Signal

__all__ = [
    "CANCEL_GRACE_S",
    "DEFAULT_MEMORY_MB",
    "FOLDER_PREFIX",
    "STALE_FOLDER_AGE_S",
    "ScriptProcess",
    "default_memory_mb",
    "remove_stale_folders",
]

CANCEL_GRACE_S = 0.8  # from Cancel to a killed worker; reading what it sent comes after
# after the result, Cancel stops the detectors: the worker ends once it has written the
# recordings the app may still read, or is killed this long after
WRITE_GRACE_S = 30.0
_MAX_FRAME = 64 * 1024 * 1024
_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding viewer/ and autodiff/


# A run's folder is named for the app's process: FOLDER_PREFIX + "<pid>-" + random letters.
FOLDER_PREFIX = "autodiff-script-"
STALE_FOLDER_AGE_S = 24 * 3600
_UID = os.getuid() if hasattr(os, "getuid") else 0
_FOLDER_PID = re.compile(re.escape(FOLDER_PREFIX) + r"(\d{1,10})-")


def scratch_parent() -> str:
    """Where runs' folders go: in memory (/dev/shm) where the system offers it, since a long
    run's recording is hundreds of MB; else the temporary folder."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    return tempfile.gettempdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # someone else's process, or cannot tell: not ours to judge
    return True


def remove_stale_folders(
    parent: str | None = None, max_age_s: float = STALE_FOLDER_AGE_S, now: float | None = None
) -> list[str]:
    """Remove the folders of runs whose app is no longer alive, untouched for ``max_age_s``
    (a run's folder is removed when its result is dropped, and by its worker when the app
    goes away mid-run; what a crash, a power cut or a killed worker left is removed here, at
    start-up). A folder an app holds (:func:`hold_folder`) stays, however old: a result
    reads its graphs from it for as long as it is shown. Returns the removed."""
    parent = parent or scratch_parent()
    now = time.time() if now is None else now
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(FOLDER_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not entry.is_dir(follow_symlinks=False) or info.st_uid != _UID:
            continue  # another user's (a shared /dev/shm), or not a folder: not ours
        age = now - info.st_mtime
        owner = _FOLDER_PID.match(entry.name)
        if age < max_age_s or (owner is not None and _alive(int(owner.group(1)))):
            continue
        if folder_in_use(entry.path):  # its app runs where its pid is not seen (a container)
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.exists(entry.path):
            removed.append(entry.path)
    return removed


# The resident memory a script's worker may use by default, in MiB: every bundled example
# needs under 150 (bench/script_memory.py), and the app stays usable beside it on a small machine.
DEFAULT_MEMORY_MB = 800


def default_memory_mb() -> int:
    """The resident memory a script's worker may use unless told otherwise, in MiB."""
    return DEFAULT_MEMORY_MB


# A line the worker has not finished yet waits this long for its end before it is shown, and
# is shown at once beyond this many characters.
_PARTIAL_LINE_S = 0.25
_MAX_PARTIAL_LINE = 65536


# After the worker sent its result it has closed its output: the readers get what is left in
# the pipes within this (longer only when a process the script started holds them open).
_OUTPUT_END_S = 1.0


class PendingProblems:
    """The problem report of a run whose worker sent the result first and looks for problems
    after it (``ScriptResult.problems_pending``), so that the graph shows meanwhile. Filled on
    the run's supervising thread: ``report`` (None: none came, and ``error`` says why, or
    the run had nothing to look at)."""

    def __init__(self, stop: Callable[[], None]) -> None:
        # weak: the result holds this, and its folder goes when the result goes
        self._stop = weakref.WeakMethod(stop)  # type: ignore[arg-type]
        self._event = threading.Event()
        self.report: ProblemReport | None = None
        self.error: str | None = None
        self.stopped = False

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the report came (or will not); False on timeout."""
        return self._event.wait(timeout)

    def stop(self) -> None:
        """Stop the detectors (their worker ends): no report comes."""
        if not self._event.is_set():
            self.stopped = True
            stop = self._stop()
            if stop is not None:
                stop()

    def _set(self, report: ProblemReport | None, error: str | None) -> None:
        if not self._event.is_set():
            self.report, self.error = report, error
            self._event.set()


class ScriptProcess(_RunState):
    """One run of one script in a worker process; the same face as
    :class:`~viewer.model.scripts.run.ScriptRun` (``start``/``run``/``wait``/``cancel``,
    ``running``/``done``/``result`` and the three signals)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        argv: list[str] | None = None,
        max_array_size: int = 4096,
        memory_mb: int | None = None,
        max_passes: int = DEFAULT_MAX_PASSES,
    ) -> None:
        self.path = Path(path).resolve()
        # the graphs of about this many backward passes come back
        # (viewer.model.scripts.pass_sampling)
        self.max_passes = max(2, int(max_passes))
        self.argv = list(argv or [])
        self.max_array_size = max_array_size
        self.memory_mb = default_memory_mb() if memory_mb is None else max(0, int(memory_mb))
        self.sample_functions = 0  # >0: the worker keeps samples for the gradient check
        # the problem detectors' limits in the worker (result.problems)
        self.problem_limits = Thresholds()
        # a weak reference to the check asked at start: why this run may not start now (None:
        # it may). The Document that prepared it sets it, so a run it no longer follows cannot
        # start beside another; weak, for the run's thread must reach nothing of the window.
        self.may_start: Callable[[], Callable[[ScriptProcess], str | None] | None] | None = None
        self.output_written = Signal("output_written")
        self.stage_changed = Signal("stage_changed")
        self.finished = Signal("finished")
        self.result: ScriptResult | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._started = False
        self._released = False  # release(): it will not start
        self._done = threading.Event()
        self._lock = threading.RLock()
        self._cancel_requested = False
        self._killed = False
        self._began = 0.0
        self._folder: str | None = None
        self._folder_lock = -1  # hold_folder's: the folder is in use until the result goes
        self._channel = -1
        self._lifeline = -1
        self._stdout: list[str] = []
        self._stderr: list[str] = []
        self._start_error: str | None = None
        self._readers: list[threading.Thread] = []  # of the worker's stdout and stderr
        self._frames = b""  # what came on the channel past the last whole frame
        self._after_done: list[str] = []  # the worker's stages after its result
        # the report that comes after the result (None: the run is over with its result)
        self._pending: PendingProblems | None = None
        self._meta: ResultMeta | None = None  # (to number the late report's graphs)
        self._recollected = False  # the graph list was made again from the recording

    # ------------------------------------------------------------------ the run's face
    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> threading.Thread:
        """Start the worker and supervise it on a daemon thread; returns the thread."""
        self._begin()
        thread = threading.Thread(target=self._supervise, name=f"script {self.path.name}")
        thread.daemon = True
        thread.start()
        return thread

    def run(self) -> ScriptResult:
        """Run the script and wait for its result, on this thread."""
        self._begin()
        return self._supervise()

    def cancel(self) -> None:
        """Ask the worker to stop; kill it (and what it started) CANCEL_GRACE_S later. After
        the result, stop its problem detectors (it ends once it has written the recordings
        the app may still read; killed WRITE_GRACE_S later)."""
        with self._lock:
            self._cancel_requested = True
            proc = self._proc
            if proc is None:
                return
            grace = CANCEL_GRACE_S
            if self._done.is_set():
                # after the result: the detectors stop; the worker first writes the
                # recordings the app may still read, then ends
                pending = self._pending
                if pending is None or pending.done:
                    return
                pending.stopped = True
                grace = WRITE_GRACE_S
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
        timer = threading.Timer(grace, self._kill)
        timer.daemon = True
        timer.start()

    def _kill(self) -> None:
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                return
            self._killed = True
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                proc.kill()

    # ------------------------------------------------------------------ starting
    def _begin(self) -> None:
        if self._started:
            raise RuntimeError("this ScriptProcess was already started")
        check = self.may_start() if self.may_start is not None else None
        refused = check(self) if check is not None else None
        if refused is not None:
            raise RuntimeError(refused)
        if self._released:
            raise RuntimeError(f"this run of {self.path.name} was let go: prepare it again")
        self._started = True
        self._began = time.perf_counter()
        try:
            if self._proc is not None and self._told(self._proc):
                return
            self._release_warm()  # (it ended meanwhile: a fresh worker then)
            self._spawn()
        except OSError as e:
            self._start_error = f"could not start the script's worker process: {e}"

    def warm_up(self) -> None:
        """Start the worker now, before the run is confirmed: its imports (a few tenths of a
        second) happen while the user reads the question. It runs nothing, not even reads
        the script, until :meth:`start` or :meth:`run`; :meth:`release` ends it. Without
        effect once started, or where the worker cannot start (start then says why)."""
        with self._lock:
            if self._started or self._released or self._proc is not None:
                return
            with contextlib.suppress(OSError):
                self._spawn(warm=True)

    def release(self) -> None:
        """The run will not start (the user said no): end a worker :meth:`warm_up` started,
        and remove its folder."""
        with self._lock:
            if self._started:
                return
            self._released = True  # (a run let go is not started later)
            self._release_warm()

    def _release_warm(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()  # type: ignore[union-attr]  # (ends it: no settings came)
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            threading.Thread(target=_reap, args=(proc,), name="warm worker", daemon=True).start()
        self._cleanup()

    def _told(self, proc: subprocess.Popen[bytes]) -> bool:
        """Send the warm worker its settings; False if it is gone."""
        try:
            proc.stdin.write(json.dumps(self._settings()).encode() + b"\n")  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except (OSError, ValueError):
            return False
        return proc.poll() is None

    def _settings(self) -> dict[str, Any]:
        """What the worker needs to know of the run besides its channel, lifeline and
        folder."""
        return {
            "path": str(self.path),
            "argv": self.argv,
            "max_array_size": int(self.max_array_size),
            "memory_mb": int(self.memory_mb),
            "sample_functions": int(self.sample_functions),
            "max_passes": int(self.max_passes),
            "problem_limits": dataclasses.asdict(self.problem_limits),
        }

    def _spawn(self, warm: bool = False) -> None:
        self._folder = tempfile.mkdtemp(
            prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=scratch_parent()
        )
        self._folder_lock = hold_folder(self._folder)
        channel_r, channel_w = os.pipe()
        lifeline_r, lifeline_w = os.pipe()
        config = {
            **({} if warm else self._settings()),
            "channel": channel_w,
            "lifeline": lifeline_r,
            "result": self._folder,
        }
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        env.setdefault("MPLBACKEND", "Agg")  # a plot window has no place in a worker
        env["PYTHONFAULTHANDLER"] = "1"  # a crash prints where it happened
        env.pop("PYTHONSTARTUP", None)
        # Started in its (empty) result folder, without the current folder on sys.path: a
        # module the user's folder holds cannot stand in for the worker's own imports before
        # the script runs (it then moves to the script's folder, as ``python script.py``).
        main = "main_when_told" if warm else "main"
        entry = f"from viewer.model.scripts.worker import {main}; {main}()"
        try:
            with self._lock:
                if self._cancel_requested:
                    raise OSError("cancelled before it started")
                self._proc = subprocess.Popen(
                    [sys.executable, "-P", "-c", entry, json.dumps(config)],
                    # a warm worker reads its settings there; the script reads an empty input
                    stdin=subprocess.PIPE if warm else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(channel_w, lifeline_r),
                    cwd=self._folder,
                    env=env,
                    start_new_session=True,  # its own group: Cancel ends what it started too
                )
        except OSError:
            for fd in (channel_r, lifeline_w):
                os.close(fd)
            raise
        finally:
            os.close(channel_w)
            os.close(lifeline_r)
        self._channel, self._lifeline = channel_r, lifeline_w

    # ------------------------------------------------------------------ supervising
    def _supervise(self) -> ScriptResult:
        try:
            result = self._watch()
        except Exception as e:  # the run must always end with a result
            result = self._failed(f"the script's worker could not be followed: {e}")
            self._pending = None
        finally:
            if self._pending is None:
                self._end_worker()
                self._cleanup()
        self.result = result
        self._done.set()
        if self._pending is not None:
            # on a thread of its own (run() returns with the result), started before the
            # result is announced: whoever gets it may wait for the report at once
            threading.Thread(
                target=self._await_problems,
                args=(self._pending,),
                name=f"problems of {self.path.name}",
                daemon=True,
            ).start()
        self.finished.emit(result)
        return result

    def _watch(self) -> ScriptResult:
        proc = self._proc
        if proc is None:
            return self._failed(self._start_error or "the script's worker did not start")
        self._readers = [
            threading.Thread(target=self._read_stream, args=(pipe, kept), daemon=True)
            for pipe, kept in ((proc.stdout, self._stdout), (proc.stderr, self._stderr))
        ]
        for reader in self._readers:
            reader.start()
        done = self._read_channel(proc, "done") is not None
        if done:
            # the worker closed its output before it wrote the result; it looks for problems
            # now, and sends their report later (_await_problems)
            for reader in self._readers:
                reader.join(_OUTPUT_END_S)
            try:
                result = self._read_result()
            except (OSError, ValueError, TypeError, KeyError) as e:
                self._kill()  # its report would be of a result the app does not have
                return self._failed(f"the script's result could not be read: {e}")
            self._pending = result.problems_pending = PendingProblems(self.cancel)
            return result
        self._end_worker()
        if self._result_written():
            try:
                return self._read_result()
            except (OSError, ValueError, TypeError, KeyError) as e:
                return self._failed(f"the script's result could not be read: {e}")
        return self._ended_early(proc.returncode)

    def _end_worker(self) -> None:
        """Wait for the worker's end, end what it started, and read its output to the end."""
        proc = self._proc
        if proc is None:
            return
        proc.wait()
        with contextlib.suppress(OSError):  # what the script started ends with its run
            os.killpg(proc.pid, signal.SIGKILL)
        for reader in self._readers:
            # a grandchild holding the pipes must not hold the result
            reader.join(2.0)

    def _await_problems(self, pending: PendingProblems) -> None:
        """After the result: the worker's problem report, on ``pending``."""
        report: ProblemReport | None = None
        error: str | None = None
        text: str | None = None
        try:
            assert self._proc is not None
            text = self._read_channel(self._proc, "problems")
            if text:
                report, error = _report_from_json(json.loads(text))
                if report is not None and self._meta is not None:
                    report = _problems_of(dataclasses.replace(self._meta, problems=report))
                    if self._recollected:
                        report = _renumbered(report, {})
            elif text == "" and self._after_done:
                error = self._after_done[-1]  # "could not look for problems: ..."
        except Exception as e:  # the result stands without its report
            error = f"the problem report could not be read: {type(e).__name__}: {e}"
        finally:
            self._end_worker()
            self._cleanup()
        if text is None and error is None:
            error = self._no_report(pending)
        pending._set(report, error)

    def _no_report(self, pending: PendingProblems) -> str:
        """Why the worker ended without its problem report, in one line."""
        code = self._proc.returncode if self._proc is not None else None
        if pending.stopped or code == STOPPED_EXIT:
            return "the problem detectors were stopped"
        if code == MEMORY_EXIT_SENDING:
            what = f"they needed more than {self.memory_mb} MiB, the script's limit"
        elif code is not None and code < 0:
            what = f"their process ended ({_signal_name(-code)})"
        else:
            what = f"their process exited with status {code}"
        return f"the problem detectors did not finish: {what}"

    def _read_channel(self, proc: subprocess.Popen[bytes], until: str) -> str | None:
        """Forward frames until one of kind ``until`` (its text), the worker's end or the
        channel's (None). A process the script started may hold the channel open after the
        worker ended: the worker's own end is what counts, once what it wrote before it ended
        is read. Frames that came with an earlier one (the result's "done" and the problem
        report in one read) are taken first. Stages after the result are kept
        (``_after_done``), not forwarded: the run the app follows is over."""
        fd = self._channel
        if fd < 0:
            return None
        ended = False
        while True:
            found, ok = self._take_frame(until)
            if not ok:
                self._kill()  # the script wrote over the worker's messages
                return None
            if found is not None:
                return found
            if ended:
                # the worker has ended: only what it wrote before that is still to read
                if not select.select([fd], [], [], 0)[0]:
                    return None
            elif not select.select([fd], [], [], 0.2)[0]:
                # (read once more after its end: it may have written just before it)
                ended = proc.poll() is not None
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._frames += chunk

    def _take_frame(self, until: str) -> tuple[str | None, bool]:
        """The frames whole in what came on the channel, taken in order up to one of kind
        ``until``: (its text or None, whether the frames were well formed)."""
        pending = self._frames
        try:
            while len(pending) >= 4:
                (size,) = struct.unpack("<I", pending[:4])
                if size > _MAX_FRAME:
                    return None, False
                if len(pending) < 4 + size:
                    break
                body, pending = pending[4 : 4 + size], pending[4 + size :]
                try:
                    message = json.loads(body)
                    kind, text = message["t"], message["s"]
                except (ValueError, TypeError, KeyError):
                    return None, False
                if kind == until:
                    return str(text), True
                if kind == "stage":
                    if self._done.is_set():
                        self._after_done.append(str(text))
                    else:
                        self.stage_changed.emit(str(text))
            return None, True
        finally:
            self._frames = pending

    def _read_stream(self, pipe: Any, kept: list[str]) -> None:
        """One of the worker's streams: kept (up to a cap) and sent on in batches.

        Only whole lines are passed on while more may come (the other stream's output goes
        to the same panel, and ``print`` writes its text and its newline separately); a
        line without its end is sent once the stream has been quiet for _PARTIAL_LINE_S,
        so a prompt without a newline still shows."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        stream = _ThreadStream(None, threading.get_ident(), kept, self.output_written)
        flusher = _Flusher((stream,))
        partial = ""
        try:
            with pipe:
                fd = pipe.fileno()
                while True:
                    if partial and not select.select([fd], [], [], _PARTIAL_LINE_S)[0]:
                        stream.write(partial)
                        partial = ""
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    text = partial + decoder.decode(chunk)
                    cut = text.rfind("\n") + 1
                    if len(text) - cut > _MAX_PARTIAL_LINE:
                        cut = len(text)
                    if cut:
                        stream.write(text[:cut])
                    partial = text[cut:]
            partial += decoder.decode(b"", final=True)
        except (OSError, ValueError):
            pass
        finally:
            if partial:
                stream.write(partial)
            flusher.stop()
            stream.emit_pending()

    def _result_written(self) -> bool:
        return self._folder is not None and os.path.isfile(os.path.join(self._folder, RESULT_NAME))

    def _cleanup(self) -> None:
        for fd in (self._channel, self._lifeline):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._channel = self._lifeline = -1
        if self._folder_lock >= 0:
            with contextlib.suppress(OSError):
                os.close(self._folder_lock)
            self._folder_lock = -1
        if self._folder is not None:  # (a result that reads from it took it over)
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    # ------------------------------------------------------------------ results
    def _base(self, **fields: Any) -> ScriptResult:
        values: dict[str, Any] = {
            "path": self.path,
            "ok": False,
            "cancelled": False,
            "error": None,
            "stdout": "".join(self._stdout),
            "stderr": "".join(self._stderr),
            "trace": None,
            "duration": time.perf_counter() - self._began,
        }
        values.update(fields)
        return ScriptResult(**values)

    def _failed(self, message: str) -> ScriptResult:
        return self._base(error=message, error_message=message)

    def _ended_early(self, returncode: int) -> ScriptResult:
        """No result came: say how the worker ended, in one line."""
        if self._killed:
            message = (
                f"the script did not stop within {CANCEL_GRACE_S:g} s of Cancel: its process "
                "was ended, and what it built is not kept"
            )
            return self._base(cancelled=True, error="cancelled", error_message=message)
        if self._cancel_requested and returncode == -signal.SIGTERM:  # before its handler
            message = "the script's process ended at the Cancel, before it sent anything"
            return self._base(cancelled=True, error="cancelled", error_message=message)
        if returncode < 0:
            name = _signal_name(-returncode)
            if -returncode == signal.SIGKILL:
                message = f"the script's process was killed ({name}), perhaps for lack of memory"
            else:
                message = f"the script's process crashed ({name})"
        elif returncode == 70:
            message = "the script's process stopped: it could not talk to the app"
        elif returncode == 72:
            message = "the script ended, but its process could not send the result"
        elif returncode == MEMORY_EXIT:
            message = f"{memory_message(self.memory_mb)}; it did not stop, so its process was ended"
        elif returncode == MEMORY_EXIT_SENDING:
            message = f"the script ended, but {memory_message(self.memory_mb, sending=True)}"
        else:
            message = (
                f"the script's process exited with status {returncode} before it finished "
                "(os._exit from a thread, or a crash)"
            )
        # The crash report is in the output already (stderr, kept in the result): the error
        # is the one line.
        line = _crash_line("".join(self._stderr), self.path)
        return self._base(error=message, error_message=message, error_line=line)

    def _read_result(self) -> ScriptResult:
        """The result, less the recordings of the graphs not shown: those stay in the run's
        folder, which the result takes over (a ResultFolder), until they are selected."""
        assert self._folder is not None
        self.stage_changed.emit("reading the result")
        meta = self._meta = read_meta(self._folder)
        proc = self._proc
        folder = ResultFolder(
            self._folder,
            meta.trace_sent,
            self._folder_lock,
            # the worker writes the graphs not shown after the result
            writing=(lambda: proc.poll() is None) if proc is not None else None,
        )
        self._folder, self._folder_lock = None, -1  # the result's now, removed with it
        graphs = self._read_graphs(meta.graphs) if meta.trace_sent else []
        error_message = meta.error_message
        if _is_memory_error(error_message) and self.memory_mb:
            error_message += f" (a script may use {self.memory_mb} MiB: {MEMORY_SETTING})"
        stderr = "".join(self._stderr)
        if meta.trace_error:
            stderr += f"\n[the recording could not be sent: {meta.trace_error}]\n"
        if meta.problems_error:
            stderr += f"\n[{meta.problems_error}]\n"
        result = self._base(
            ok=meta.ok,
            cancelled=meta.cancelled,
            error=meta.error,
            stderr=stderr,
            graphs=graphs,
            leak_report=meta.leaks,
            leak_error=meta.leak_error,
            exit_code=meta.exit_code,
            error_line=meta.error_line,
            error_message=error_message,
            samples=read_samples(meta, folder.path),
            passes=read_passes(meta, folder.path),
            sampling=meta.sampling or "",
            forward_only=meta.forward_only,
            problems=_problems_of(meta),
            folder=folder,
        )
        if graphs:
            self.stage_changed.emit("preparing the last graph")
            try:
                try:
                    result.trace_of(len(graphs) - 1).node(graphs[-1].root)
                except (IndexError, KeyError):  # the worker's list does not fit its recording
                    result.graphs = _collect_graphs(result.trace, self.stage_changed)
                    self._recollected = True
                    if result.problems is not None:  # its graph numbers are the worker's list's
                        result.problems = _renumbered(result.problems, {})
                if result.graphs:
                    result.view(len(result.graphs) - 1)
            except Exception as e:  # shown later, when the document asks for the view
                self.stage_changed.emit(f"could not prepare the graph: {e}")
        if not result.unread():
            folder.release()  # nothing more to read: the folder need not wait for the result
        return result

    @staticmethod
    def _read_graphs(rows: tuple[GraphRow, ...]) -> list[ScriptGraph]:
        """The graphs the worker listed; a pass with a segment of its own names it, to be read
        from the run's folder when the graph is first viewed (``ScriptResult.view``)."""
        graphs = []
        for row in rows:
            if row.segment < 0 and row.segment != SEGMENT_NONE:
                continue  # its recording could not be sent
            graphs.append(
                ScriptGraph(
                    row.title,
                    row.root,
                    row.backward_pass,
                    row.number,
                    row.iteration,
                    row.loss,
                    row.flags,
                    segment=row.segment,
                )
            )
        return graphs


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a worker that ended without a run, and close its pipes."""
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _problems_of(meta: ResultMeta) -> ProblemReport | None:
    """The worker's problem report, its graph numbers those of the graphs listed here (a row
    whose recording could not be sent is not listed: the graphs after it move up)."""
    report = meta.problems
    if report is None:
        return None
    if not meta.trace_sent:
        return _renumbered(report, {})
    index: dict[int, int] = {}
    for row_index, row in enumerate(meta.graphs):
        if row.segment >= 0 or row.segment == SEGMENT_NONE:
            index[row_index] = len(index)
    if len(index) == len(meta.graphs):
        return report
    return _renumbered(report, index)


def _renumbered(report: ProblemReport, index: dict[int, int]) -> ProblemReport:
    """``report`` with each problem's graph renumbered by ``index``; a problem of a graph not
    in it keeps its message, without the graph's step and nodes."""
    problems = []
    for p in report.problems:
        if p.graph is None or p.graph in index:
            graph = None if p.graph is None else index[p.graph]
            problems.append(dataclasses.replace(p, graph=graph))
        else:
            problems.append(dataclasses.replace(p, graph=None, step=None, nodes=()))
    return dataclasses.replace(report, problems=problems)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


_FRAME_LINE = re.compile(r'File "(.+)", line (\d+)')


def _crash_line(console: str, path: Path) -> int | None:
    """The script's line in a crash report (faulthandler's, most recent call first)."""
    for match in _FRAME_LINE.finditer(console):
        with contextlib.suppress(OSError, ValueError):
            if Path(match.group(1)).resolve() == path:
                return int(match.group(2))
    return None


def _is_memory_error(message: str | None) -> bool:
    """``MemoryError: ...`` or numpy's ``_ArrayMemoryError: Unable to allocate ...``."""
    return message is not None and message.split(":", 1)[0].endswith("MemoryError")
