"""``autodiff-viewer --check PROGRAM --yes [--json]``: a program's gradient bugs, without a window.

A lint for gradient bugs a user can put in their own CI. ``PROGRAM`` is

* a script (``.py``): run as the app runs it, in a worker process of its own
  (:class:`~viewer.model.scripts.process.ScriptProcess`), only with ``--yes`` (it is code);
  its own Functions are gradient-checked as they run, and the worker runs every detector over
  the passes it kept and over its whole pass log (``ScriptResult.problems``);
* a saved trace (``.json``, or the binary ``.npz``): every detector over each backward pass;
* a typed program (``.expr``, ``.txt``): parsed against the expression language's whitelist
  and run, then every detector over its graph.

Output (stdout): one line per problem, beginning with its kind (``Problem.line``), most
severe first; with ``--json``, one JSON array of ``Problem.to_json`` objects and nothing else.
A bug seen in many passes is one problem (``ProblemReport.problems`` groups the same culprit's
findings across graphs; its message says in how many passes and in which first).
Which detectors ran, which could not and why, and a failing program's error go to stderr, as
does a script's own output.

Exit status: 0 when nothing above ``info`` was found; 1 when a warning or an error was, or when
the program itself failed (an exception, a typed program that cannot run: what it recorded up
to then is still checked and printed); 2 for a usage error (a script without ``--yes``, a
missing or unreadable file, an unknown suffix, a typed program that does not parse).

No Qt is imported: it runs where there is no display.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from viewer.model.checks.problems import (
    KINDS,
    GraphInput,
    ProblemReport,
    Thresholds,
    detect,
)

__all__ = [
    "EXIT_CLEAN",
    "EXIT_FOUND",
    "EXIT_USAGE",
    "CheckOutcome",
    "CheckUsageError",
    "check_path",
    "run_check",
]

EXIT_CLEAN = 0
EXIT_FOUND = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # Ctrl+C, as a shell reports SIGINT

SCRIPT_SUFFIXES = (".py",)
TRACE_SUFFIXES = (".json", ".npz")
EXPRESSION_SUFFIXES = (".expr", ".txt")
# The run detectors read a script run's every pass: a single graph has none
RUN_KINDS = ("diverging-loss", "graph-held", "wrong-backward")
# What a script's worker keeps of each Function class for the gradient check (as the app's)
SAMPLES_PER_CLASS = 2


class CheckUsageError(Exception):
    """The program cannot be checked as asked (exit status 2); the text says why."""


@dataclass
class CheckOutcome:
    """What ``--check`` found: the report, and the program's failure when it failed
    (``failure``: one line; ``details``: the traceback, for stderr)."""

    report: ProblemReport
    failure: str | None = None
    details: str = ""
    notes: list[str] = field(default_factory=list)
    unfinished: bool = False  # the detectors were stopped (--timeout): no clean bill either

    @property
    def exit_status(self) -> int:
        if self.failure is not None or self.unfinished or self.report.above_info():
            return EXIT_FOUND
        return EXIT_CLEAN


def check_path(
    path: str | Path,
    *,
    run_scripts: bool = False,
    limits: Thresholds | None = None,
    max_passes: int | None = None,
    echo: Callable[[str], Any] | None = None,
    timeout: float | None = None,
) -> CheckOutcome:
    """Check the program at ``path`` (see the module's docstring); CheckUsageError when it
    cannot be. ``echo``: where a script's own output goes as it runs (None: dropped);
    ``timeout``: seconds after which a script is stopped (what it recorded is still checked)."""
    path = Path(path)
    suffix = path.suffix.lower()
    known = SCRIPT_SUFFIXES + TRACE_SUFFIXES + EXPRESSION_SUFFIXES
    if suffix not in known:
        raise CheckUsageError(
            f"cannot check {path.name}: unknown file type (use {', '.join(known)})"
        )
    if not path.exists():
        raise CheckUsageError(f"no such file: {path}")
    if not path.is_file():
        raise CheckUsageError(f"cannot check {path.name}: not a regular file")
    limits = limits or Thresholds()
    if suffix in SCRIPT_SUFFIXES:
        if not run_scripts:
            raise CheckUsageError(
                f"{path.name} is Python code and --check would run it: scripts are run only "
                "with --yes (only for scripts you trust)"
            )
        return _check_script(path, limits, max_passes, echo, timeout)
    if suffix in TRACE_SUFFIXES:
        return _check_trace(path, limits)
    return _check_expression(path, limits)


def _check_script(
    path: Path,
    limits: Thresholds,
    max_passes: int | None,
    echo: Callable[[str], Any] | None,
    timeout: float | None = None,
) -> CheckOutcome:
    import threading

    from viewer.model.scripts.process import ScriptProcess

    process = ScriptProcess(path, **({} if max_passes is None else {"max_passes": max_passes}))
    process.sample_functions = SAMPLES_PER_CLASS
    process.problem_limits = limits
    if echo is not None:
        process.output_written.connect(echo)
    # a script that hangs is stopped as the window's Cancel stops it: its worker is told to
    # stop, and killed a moment later; Ctrl+C does the same, then ends the command
    timer = threading.Timer(timeout, process.cancel) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        result = process.run()
        pending = result.problems_pending  # the worker looks for problems after the result
        if pending is not None:
            pending.wait()
    except KeyboardInterrupt:
        process.cancel()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    try:
        report = result.problems if pending is None else pending.report
        notes = []
        if report is None:
            report = ProblemReport()
            why = pending.error if pending is not None else None
            notes.append(f"{why or 'the worker sent no problem report'}: nothing was checked")
        failure = None
        details = ""
        if result.cancelled:
            failure = f"{path.name} was stopped after {timeout:g} s (--timeout)"
        elif not result.ok:
            failure = result.error_summary or result.summary
            details = result.error or ""
        # the script ran to its end but the check did not (--timeout, a worker that ended
        # before its report): not a clean bill
        unfinished = pending is not None and pending.report is None and pending.error is not None
        if unfinished and pending.stopped and timeout is not None:
            notes = [
                f"the problem detectors were stopped after {timeout:g} s (--timeout): nothing "
                "was checked"
            ]
        return CheckOutcome(report, failure, details, notes, unfinished)
    finally:
        if result.folder is not None:
            result.folder.release()


def _check_trace(path: Path, limits: Thresholds) -> CheckOutcome:
    from autodiff.trace import TraceFormatError, load, trace_from_npz
    from viewer.model.checks.pass_graphs import pass_inputs
    from viewer.model.document.file_loader import MAX_TRACE_BYTES

    try:
        if path.suffix.lower() == ".npz":
            trace = trace_from_npz(path)
        else:
            trace = load(path, max_bytes=MAX_TRACE_BYTES)
    except (TraceFormatError, OSError, ValueError) as e:
        raise CheckUsageError(f"cannot read {path.name} as a saved trace: {e}") from None
    return CheckOutcome(_detect_single(pass_inputs(trace, path.name, "trace"), limits))


def _check_expression(path: Path, limits: Thresholds) -> CheckOutcome:
    from viewer.model.checks.pass_graphs import pass_inputs
    from viewer.model.document.file_loader import read_text_bounded
    from viewer.model.expression.program import MAX_SOURCE_CHARS, ExpressionError, parse

    try:
        text = read_text_bounded(path, MAX_SOURCE_CHARS)
    except (OSError, ValueError) as e:
        raise CheckUsageError(str(e)) from None
    try:
        program = parse(text)
    except ExpressionError as e:
        raise CheckUsageError(
            f"{path.name} is not a program of the expression language: {e}"
        ) from None
    try:
        evaluation = program.run()
    except ExpressionError as e:
        return CheckOutcome(ProblemReport(), f"{path.name}: {e}")
    inputs = pass_inputs(evaluation.trace, path.name, "engine", str(path))
    report = _detect_single(inputs, limits)
    evaluation.release()
    return CheckOutcome(report)


def _detect_single(inputs: tuple[Iterator[GraphInput], int], limits: Thresholds) -> ProblemReport:
    graphs, total = inputs
    report = detect(graphs, None, limits, total=total)
    for kind in RUN_KINDS:
        if kind not in report.ran:
            report.skipped.setdefault(kind, "needs a script's run (every pass's loss and flags)")
    return report


# =============================================================================
# The command
# =============================================================================
def run_check(
    path: str,
    *,
    run_scripts: bool,
    as_json: bool,
    max_passes: int | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    timeout: float | None = None,
) -> int:
    """``--check``: print what :func:`check_path` found and return the exit status (130 when
    interrupted with Ctrl+C: the script's worker is stopped first)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        outcome = check_path(
            path, run_scripts=run_scripts, max_passes=max_passes, echo=err.write, timeout=timeout
        )
    except CheckUsageError as e:
        print(f"autodiff-viewer: {e}", file=err)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("autodiff-viewer: interrupted", file=err)
        return EXIT_INTERRUPTED
    report = outcome.report
    if as_json:
        print(json.dumps([p.to_json() for p in report.problems], indent=1), file=out)
    else:
        for problem in report.problems:
            print(problem.line(), file=out)
    print(f"autodiff-viewer: {report.summary()}", file=err)
    ran = [k for k in KINDS if k in report.ran]
    if ran:
        print(f"  ran: {', '.join(ran)}", file=err)
    never, partly = report.not_run()
    for kind, why in never.items():
        print(f"  could not run: {kind}: {why}", file=err)
    for kind, why in partly.items():
        print(f"  not on every graph: {kind}: {why}", file=err)
    for note in outcome.notes:
        print(f"  {note}", file=err)
    if outcome.failure is not None:
        if outcome.details:
            print(outcome.details.rstrip(), file=err)
        print(f"autodiff-viewer: the program failed: {outcome.failure}", file=err)
    return outcome.exit_status
