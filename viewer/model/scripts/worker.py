"""The script worker: one user script run in an interpreter of its own, for the app.

``python -c "from viewer.model.scripts.worker import main; main()" CONFIG`` (CONFIG is JSON,
written by :class:`viewer.model.scripts.process.ScriptProcess`) runs the script with
:class:`~viewer.model.scripts.run.ScriptRun` on its main thread, under its own memory limit,
and sends what happens over the ``channel`` pipe as frames (a 4-byte little-endian length,
then UTF-8 JSON ``{"t": kind, "s": text}``); what the script prints goes to the worker's
stdout and stderr, pipes the app reads:

* ``stage``: what the worker is doing after the script ended ("auditing leaks"...);
* ``done``: the result is in the ``result`` folder, in the files
  :mod:`viewer.model.scripts.result_schema` writes and reads. Never pickle.
* ``problems``: then, the problem detectors' report over the run
  (:meth:`~viewer.model.checks.problems.ProblemReport.to_json` as JSON text; empty: none),
  looked for after the result went, so that the app shows the graph meanwhile. The worker's
  stdout and stderr are closed before ``done``: the script's output is all there by then.

Memory (:func:`_limit_memory`): past ``memory_mb`` MiB of resident size the script is stopped
as by Cancel, and the run fails with :func:`memory_message`.

SIGTERM is Cancel: the script stops where it is (a sleep or a loop included) with
:class:`~viewer.model.scripts.run.ScriptCancelled`, and the worker sends what it built up to
then, if it can before the app's deadline. The worker ends with ``os._exit``, so a thread the
script left running cannot keep it alive, and it ends too when the app goes away (the
``lifeline`` pipe reaches end of file).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = [
    "AS_BACKSTOP_FACTOR",
    "MEMORY_EXIT",
    "MEMORY_EXIT_SENDING",
    "main",
    "memory_message",
]

# A Cancel that lands in a recorder's own code is sent again this much later, up to this many
# times (then it stops the script wherever it is): a run spends most of its time in the
# script's code between two recordings of an operation, and the app kills a worker that has
# not sent its result within process.CANCEL_GRACE_S of the Cancel.
CANCEL_RETRY_S = 0.002
CANCEL_RETRIES = 25

# A cancelled run sends its recording only up to this many steps: more would not be written
# before the app's deadline (about 20 us a step, after the collection and the audit).
CANCEL_KEEP_STEPS = 10_000


class _Channel:
    """Frames to the app; if the app is gone, the worker ends."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, kind: str, text: str = "") -> None:
        body = json.dumps({"t": kind, "s": text}).encode("utf-8", "replace")
        frame = memoryview(struct.pack("<I", len(body)) + body)
        with self._lock:
            try:
                while frame:
                    frame = frame[os.write(self._fd, frame) :]
            except OSError:
                os._exit(70)  # the app stopped listening: nobody wants the result


# setrlimit takes a C long: anything larger overflows (RLIM_INFINITY is -1 on Linux).
_LARGEST_RLIMIT = 2**63 - 1

# The worker's exit statuses past its memory limit, which the app reports with
# memory_message: the script did not stop (it caught the stop); the script had ended, and
# collecting and sending its recording went past the limit.
MEMORY_EXIT = 73
MEMORY_EXIT_SENDING = 74
# The worker's exit status when Cancel stopped its problem detectors, after its result
STOPPED_EXIT = 75

# The resident size is read every _WATCH_S seconds of the worker's CPU time (a script grows
# only while it computes): allocating at memory speed (about 5 GB/s) it passes its limit by
# what it writes in that time, about 100 MB.
_WATCH_S = 0.02
# A script still over its limit this long after it was stopped caught the stop: its process
# ends (the app keeps its output, not its recording).
_HARD_STOP_S = 2.0
# The address space is limited too, as a backstop for one allocation too big to ever fill:
# to what the worker maps once its imports are done plus this many times the resident limit.
# Measured (bench/script_memory.py, bench/heavy_scripts.py): a worker's address space is its
# resident size plus a constant 190-250 MB (libraries, thread stacks, BLAS buffers, which grow
# with the cores and are mapped by then), whatever the script does; so twice the limit leaves
# a whole limit of room for mappings that are never filled.
AS_BACKSTOP_FACTOR = 2


# where a user changes the worker's memory limit (the app has no settings dialog: the file's
# keys are in docs/limits.md; QSettings' INI file in the user's config folder)
MEMORY_SETTING = "limits/scriptMemoryMB in ~/.config/autodiff-viewer/viewer.ini"


def memory_message(megabytes: int, sending: bool = False) -> str:
    """The one line a run stopped for its memory is reported with (``sending``: stopped once
    the script had ended, while its recording was collected and sent)."""
    what = "its recording needed" if sending else "the script used"
    return f"{what} more than {megabytes} MiB, its limit: {MEMORY_SETTING}"


def _statm(fd: int) -> tuple[int, int]:
    """The process's (address space, resident size) in bytes, from /proc/self/statm."""
    size, resident = os.pread(fd, 128, 0).split()[:2]
    page = os.sysconf("SC_PAGE_SIZE")
    return int(size) * page, int(resident) * page


class _MemoryWatch:
    """Reads the worker's resident size every _WATCH_S of CPU time. While the script runs,
    calls ``stop`` (which raises, as Cancel does) once it passes ``limit`` bytes (:attr:`fired`
    says so). Once the script's objects are dropped and :attr:`sending` is set (collecting,
    auditing and writing its recording), ends the worker past it (MEMORY_EXIT_SENDING).

    A profiling timer's signal (SIGPROF), not a thread: its handler runs on the script's
    thread, so the GIL never changes hands for it. Measured on 30 000 tiny passes (a busy
    2-core machine): the timer's cost is within noise (worker CPU 1.63 s against 1.61 s
    unwatched, medians of 6), a thread waking every 20 ms made the run about 5% slower.
    Syscalls it interrupts are restarted (``siginterrupt``). A script that sets its own
    SIGPROF handler or profiling timer turns the watch off: the address space limit stays."""

    def __init__(
        self, limit: int, fd: int, in_script: Callable[[], bool], stop: Callable[[Any], None]
    ) -> None:
        self.limit = limit
        self.fired = False
        self.sending = False
        self._fired_at = 0.0
        self._fd = fd
        self._in_script = in_script
        self._stop = stop
        self._exit = os._exit  # the real one: the run guards os._exit on the script's thread

    def start(self) -> None:
        signal.signal(signal.SIGPROF, self._check)
        signal.siginterrupt(signal.SIGPROF, False)
        signal.setitimer(signal.ITIMER_PROF, _WATCH_S, _WATCH_S)

    def close(self) -> None:
        """Stop watching; no stop is sent after this returns."""
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, signal.SIG_IGN)

    def _check(self, signum: int, frame: Any) -> None:
        in_script = self._in_script()
        if not (in_script or self.sending):
            return
        try:
            resident = _statm(self._fd)[1]
        except (OSError, ValueError):
            return  # cannot tell: the address space limit stays
        if resident <= self.limit:
            return
        if not in_script:
            self._exit(MEMORY_EXIT_SENDING)
        elif not self.fired:
            self.fired, self._fired_at = True, time.monotonic()
            self._stop(frame)
        elif time.monotonic() - self._fired_at > _HARD_STOP_S:
            self._exit(MEMORY_EXIT)


def _limit_memory(
    megabytes: int, in_script: Callable[[], bool], stop: Callable[[Any], None]
) -> _MemoryWatch | None:
    """Bound the script's memory to ``megabytes`` MiB (0: no bound).

    Where /proc/self/statm can be read (Linux), the resident size is bounded by a
    :class:`_MemoryWatch` calling ``stop(frame)`` (returned, not started), and the address space is
    limited to AS_BACKSTOP_FACTOR times that on top of what is mapped now; elsewhere only the
    address space is limited, to ``megabytes``. The limit is clamped to what the OS accepts
    (the hard limit, the largest value setrlimit takes)."""
    if megabytes <= 0:
        return None
    limit = megabytes * 1024 * 1024
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        mapped = _statm(fd)[0]
    except (OSError, ValueError):
        _limit_address_space(limit)
        return None
    _limit_address_space(mapped + AS_BACKSTOP_FACTOR * limit)
    return _MemoryWatch(limit, fd, in_script, stop)


def _limit_address_space(limit: int) -> int:
    """Limit the address space to ``limit`` bytes, clamped; returns the limit set, 0 for none."""
    try:
        import resource
    except ImportError:  # not a POSIX system: no limit
        return 0
    limit = min(limit, _LARGEST_RLIMIT)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OverflowError, OSError) as error:
        print(f"autodiff-viewer: the script runs without a memory limit ({error})", file=sys.stderr)
        return 0
    return limit


def _watch_lifeline(fd: int, folder: str) -> None:
    """End the worker when the app is gone (its end of the lifeline closed), removing the run's
    folder first: nobody is left to read it, or to remove it."""

    def wait() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(71)

    threading.Thread(target=wait, name="lifeline", daemon=True).start()


def main_when_told() -> NoReturn:
    """A worker started ahead of its script, while the app asks the user whether to run it
    (:meth:`~viewer.model.scripts.process.ScriptProcess.warm_up`): its imports now, then the
    script's settings, one JSON line on stdin, and :func:`main`. It ends quietly at the end
    of its input (the user chose not to run the script) or of its lifeline (the app is gone);
    the script itself is not read before the line comes."""
    base: dict[str, Any] = json.loads(sys.argv[1])
    _watch_lifeline(int(base["lifeline"]), str(base["result"]))
    import autodiff.trace.formats.npz  # noqa: F401
    import viewer.model.checks.problems
    import viewer.model.scripts.pass_recording
    import viewer.model.scripts.result_schema
    import viewer.model.scripts.run  # noqa: F401

    line = sys.stdin.buffer.readline()
    if not line.strip():
        shutil.rmtree(str(base["result"]), ignore_errors=True)
        os._exit(0)
    main([json.dumps({**base, **json.loads(line)})], lifeline_watched=True)


def main(argv: list[str] | None = None, lifeline_watched: bool = False) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    config: dict[str, Any] = json.loads(args[0])
    channel = _Channel(int(config["channel"]))
    if not lifeline_watched:
        _watch_lifeline(int(config["lifeline"]), str(config["result"]))
    memory_mb = int(config.get("memory_mb", 0))

    # The collector stays off to the end (the run pauses it for the leak audit anyway): a
    # full collection over a long run's recording, as it restarts, takes longer than a
    # Cancel allows, and the process ends with os._exit, freeing nothing one by one.
    gc.disable()
    # What sending the result needs, imported now: after a Cancel there is no time for it.
    import autodiff.trace.formats.npz  # noqa: F401
    import viewer.model.scripts.result_schema  # noqa: F401
    from viewer.model.checks.problems import Thresholds
    from viewer.model.scripts.cancelling import in_recording
    from viewer.model.scripts.pass_recording import call_line
    from viewer.model.scripts.run import ScriptCancelled, ScriptRun

    # The script writes straight to this process's stdout and stderr, pipes to the app, a
    # line at a time: a crash loses nothing printed before it. Not write-through (stderr's
    # default), so that print's text and its newline leave as one write and a line of one
    # stream is not split by the other's.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(line_buffering=True, write_through=False)  # type: ignore[union-attr]
    run = ScriptRun(
        config["path"],
        list(config.get("argv", [])),
        int(config.get("max_array_size", 4096)),
        capture=False,
    )
    run.sample_functions = int(config.get("sample_functions", 0))
    run.prepare_view = False
    run.cancel_on_operation = False  # SIGTERM's handler stops the script (below)
    run.keep_on_cancel = CANCEL_KEEP_STEPS
    run.max_passes = max(2, int(config.get("max_passes", run.max_passes)))
    run.find_problems = False  # after the result: run.problems_after()
    limits = config.get("problem_limits")
    if isinstance(limits, dict):
        run.problem_limits = Thresholds.from_mapping(limits)
    run.stage_changed.connect(lambda text: channel.send("stage", text))

    deferred = [0]  # times the Cancel landed in the recording's code and was sent again
    # A Cancel sent again never comes once the run is over: SIGTERM then ends the worker.
    # (kill() delivers a signal to the process before it returns, so once ``over`` is set
    # under the lock, none is on its way but one already handled or met by the new handler.)
    again_lock = threading.Lock()
    over = [False]

    def send_again() -> None:
        with again_lock:
            if not over[0]:
                os.kill(os.getpid(), signal.SIGTERM)

    def cancel(signum: int, frame: Any) -> None:
        run.cancel()
        # stop the script where it is (a sleep, a loop, a C call's return), unless in the
        # run's own bookkeeping, which stops it as it ends, or in a recorder's code, left
        # whole: the Cancel comes again shortly (viewer.model.scripts.cancelling)
        if not run._in_script or run.bookkeeping.hold():
            return
        if in_recording(frame) and deferred[0] < CANCEL_RETRIES:
            deferred[0] += 1
            again = threading.Timer(CANCEL_RETRY_S, send_again)
            again.daemon = True
            again.start()
            return
        raise ScriptCancelled("the script was cancelled")

    signal.signal(signal.SIGTERM, cancel)

    stopped_at: list[int] = []  # the script's line it was stopped at

    def stop_for_memory(frame: Any) -> None:
        line = call_line(str(run.path), frame)
        if line >= 0:
            stopped_at.append(line)
        cancel(signal.SIGTERM, frame)

    # Set once the imports are done: the address space they mapped (BLAS threads' buffers,
    # which grow with the cores) is not the script's.
    watch = _limit_memory(memory_mb, lambda: run._in_script, stop_for_memory)
    if watch is not None:
        # the run's first stage after the script comes once its objects are dropped
        run.stage_changed.connect(lambda text: setattr(watch, "sending", True))
        # torch maps far more address space than it fills (a CUDA build reserves tens of GB):
        # the backstop goes, the resident limit stays
        run.torch_imported.connect(lambda: _limit_address_space(_LARGEST_RLIMIT))
        watch.start()
    result = run.run()
    with again_lock:
        over[0] = True
    if watch is not None:
        watch.sending = True
        if watch.fired and result.cancelled:  # a failure, not the user's Cancel
            message = memory_message(memory_mb)
            if result.error_message:  # what it recorded is not kept...
                message += f"; {result.error_message}"
            result.ok = result.cancelled = False
            result.error = result.error_message = message
            result.error_line = stopped_at[0] if stopped_at else None
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # from now on Cancel simply ends the worker
    # os._exit below flushes nothing: a last line without its newline (and whatever the script
    # set sys.stdout to) would be lost, and it must reach the app before the result does
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]
    _close_output()  # the app reads the output to its end before it reads the result
    try:
        rest = _write_result(result, config["result"], channel)
    except BaseException as e:  # a full disk, a MemoryError: say so, in one line
        channel.send("stage", f"could not send the result: {type(e).__name__}: {e}")
        os._exit(72)
    # Cancel from now on stops the detectors, not the recordings the app may still read:
    # a SIGTERM while they are written ends the worker once they are.
    after = {"writing": True, "stopped": False}

    def stop(signum: int, frame: Any) -> None:
        if not after["writing"]:
            os._exit(STOPPED_EXIT)
        after["stopped"] = True  # (ends once the recordings are written)

    signal.signal(signal.SIGTERM, stop)
    channel.send("done")
    _write_rest(rest, config["result"])
    after["writing"] = False
    if after["stopped"]:
        os._exit(STOPPED_EXIT)
    # The app shows the result; the detectors look at the run meanwhile (still within the
    # memory limit: past it the worker ends, and the app says the report did not come).
    try:
        report = run.problems_after()
        text = "" if report is None else json.dumps(report.to_json())
    except BaseException as e:  # a bug in the detectors must not cost the result
        channel.send("stage", f"could not look for problems: {type(e).__name__}: {e}")
        text = ""
    if watch is not None:
        watch.close()
    channel.send("problems", text)
    os._exit(0)


def _close_output() -> None:
    """Point the worker's stdout and stderr at /dev/null: the pipes to the app end here (unless
    a process the script started holds them), so the app has all the output before the
    result. What the worker itself might print later is not the script's."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(null, fd)
        os.close(null)


def _write_result(result: Any, folder: str, channel: _Channel) -> list[tuple[Any, str]]:
    """The result's data and the recording of the graph shown first; returns the other
    recordings, to write after the app was told (:func:`_write_rest`)."""
    from viewer.model.scripts.result_schema import (
        SEGMENT_LOST,
        SEGMENT_NAME,
        SEGMENT_NONE,
        TRACE_NAME,
        GraphRow,
        ResultMeta,
        write_meta,
        write_passes,
        write_samples,
    )

    trace_error = None
    segments: dict[int, int] = {}  # id(segment trace) -> its pass number
    rest: list[tuple[Any, str]] = []  # (recording, file name) written after the result
    if result.trace is not None:
        channel.send("stage", "sending the recording")
        files = [(result.trace, TRACE_NAME)]
        for g in result.graphs:
            if g.trace is not None and id(g.trace) not in segments:
                segments[id(g.trace)] = g.number
                files.append((g.trace, SEGMENT_NAME.format(g.number)))
        # the graph the app shows first (the last) is written now, the others after the
        # result: the app reads each when it is selected, waiting for it if it must
        shown = result.graphs[-1].trace if result.graphs else None
        first = next((k for k, (t, _) in enumerate(files) if t is shown), 0)
        try:
            _write_recording(*files[first], folder)
        except (MemoryError, OSError, ValueError, TypeError) as e:
            trace_error = f"{type(e).__name__}: {e}"
        else:
            rest = files[:first] + files[first + 1 :]
    log = result.passes
    if log is not None:
        write_passes(log, folder)
    samples = write_samples(result.samples, folder)
    graphs = tuple(
        GraphRow(
            g.title,
            g.root,
            g.backward_pass,
            g.number,
            g.iteration,
            g.loss,
            g.flags,
            SEGMENT_NONE if g.trace is None else segments.get(id(g.trace), SEGMENT_LOST),
        )
        for g in result.graphs
    )
    meta = ResultMeta(
        ok=bool(result.ok),
        cancelled=bool(result.cancelled),
        error=result.error,
        trace_sent=result.trace is not None and trace_error is None,
        trace_error=trace_error,
        graphs=graphs,
        pass_labels=None if log is None else tuple(log.parameter_labels),
        loss_label="loss" if log is None else log.loss_label,
        sampling=result.sampling,
        leaks=result.leak_report,
        leak_error=result.leak_error,
        exit_code=result.exit_code,
        error_line=result.error_line,
        error_message=result.error_message,
        samples=samples,
        samples_per_class=int(result.samples.per_class) if result.samples else 0,
        forward_only=result.forward_only,
        problems=result.problems,
    )
    write_meta(meta, folder)
    return rest


def _write_recording(trace: Any, name: str, folder: str) -> None:
    """One recording, whole or not at all: the app may be waiting for the file to appear."""
    from autodiff.trace import trace_to_npz

    part = os.path.join(folder, f"{name}.part.npz")
    trace_to_npz(trace, part)
    os.replace(part, os.path.join(folder, name))


def _write_rest(rest: list[tuple[Any, str]], folder: str) -> None:
    """The recordings of the graphs not shown, then RECORDINGS_DONE_NAME (with why a
    recording could not be written, if one could not: the app says so when it is asked
    for)."""
    from viewer.model.scripts.result_schema import RECORDINGS_DONE_NAME

    errors = []
    for trace, name in rest:
        try:
            _write_recording(trace, name, folder)
        except (MemoryError, OSError, ValueError, TypeError) as e:
            errors.append(f"{name}: {type(e).__name__}: {e}")
    done = os.path.join(folder, RECORDINGS_DONE_NAME)
    # (the app may have removed the folder already: nothing then waits for it)
    with contextlib.suppress(OSError), open(done, "w", encoding="utf-8") as f:
        f.write("; ".join(errors))
