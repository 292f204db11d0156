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
from typing import Any, NoReturn

__all__ = ["main"]

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


def _limit_memory(megabytes: int) -> int:
    """Limit the address space to ``megabytes`` MiB, clamped to what the OS accepts (the hard
    limit, the largest value setrlimit takes); returns the limit set in bytes, 0 for none."""
    if megabytes <= 0:
        return 0
    try:
        import resource
    except ImportError:  # not a POSIX system: no limit
        return 0
    limit = min(megabytes * 1024 * 1024, _LARGEST_RLIMIT)
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


def main(argv: list[str] | None = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    config: dict[str, Any] = json.loads(args[0])
    channel = _Channel(int(config["channel"]))
    _watch_lifeline(int(config["lifeline"]), str(config["result"]))
    _limit_memory(int(config.get("memory_mb", 0)))

    # The collector stays off to the end (the run pauses it for the leak audit anyway): a
    # full collection over a long run's recording, as it restarts, takes longer than a
    # Cancel allows, and the process ends with os._exit, freeing nothing one by one.
    gc.disable()
    # What sending the result needs, imported now: after a Cancel there is no time for it.
    import autodiff.trace.formats.npz  # noqa: F401
    import viewer.model.scripts.result_schema  # noqa: F401
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
    run.keep_on_cancel = CANCEL_KEEP_STEPS
    run.max_passes = max(2, int(config.get("max_passes", run.max_passes)))
    run.stage_changed.connect(lambda text: channel.send("stage", text))

    def cancel(signum: int, frame: Any) -> None:
        run.cancel()
        if run._in_script:  # stop the script where it is: a sleep, a loop, a C call's return
            raise ScriptCancelled("the script was cancelled")

    signal.signal(signal.SIGTERM, cancel)
    result = run.run()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # from now on Cancel simply ends the worker
    # os._exit below flushes nothing: a last line without its newline (and whatever the script
    # set sys.stdout to) would be lost, and it must reach the app before the result does
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]
    try:
        _write_result(result, config["result"], channel)
    except BaseException as e:  # a full disk, a MemoryError: say so, in one line
        channel.send("stage", f"could not send the result: {type(e).__name__}: {e}")
        os._exit(72)
    channel.send("done")
    os._exit(0)


def _write_result(result: Any, folder: str, channel: _Channel) -> None:
    from autodiff.trace import trace_to_npz
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
    if result.trace is not None:
        channel.send("stage", "sending the recording")
        try:
            trace_to_npz(result.trace, os.path.join(folder, TRACE_NAME))
            for g in result.graphs:
                if g.trace is not None and id(g.trace) not in segments:
                    trace_to_npz(g.trace, os.path.join(folder, SEGMENT_NAME.format(g.number)))
                    segments[id(g.trace)] = g.number
        except (MemoryError, OSError, ValueError, TypeError) as e:
            trace_error = f"{type(e).__name__}: {e}"
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
    )
    write_meta(meta, folder)
