"""The application entry point: ``autodiff-viewer [FILE]`` and the headless ``--export``.

autodiff-viewer                          the window, with the seeds' example loaded
autodiff-viewer FILE                     open an expression (.expr/.txt), a trace (.json)
                                         or a script (.py, asks before running it)
autodiff-viewer --export OUT.png|OUT.svg|OUT.pdf [--phase forward|backward] [--step N] [--yes]
                [--verbose] INPUT        render INPUT without a window and exit (a .py INPUT
                                         runs only with --yes)
autodiff-viewer --check PROGRAM --yes [--json]
                                         print PROGRAM's gradient bugs without a window, one
                                         line each (exit 1 when one is a warning or an error;
                                         see viewer.check)
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence

__all__ = ["build_window", "main", "parse_args"]


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exits 2 with the usage, like argparse, no SystemExit
        raise _UsageError(f"{self.prog}: error: {message}\n{self.format_usage()}")


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog="autodiff-viewer",
        description="See and step through backpropagation on any autodiff expression.",
    )
    p.add_argument(
        "file",
        nargs="?",
        help="an expression (.expr, .txt), a saved trace (.json) or a script (.py) to open",
    )
    p.add_argument(
        "--export",
        metavar="OUT",
        help="render FILE to OUT (.png, .svg or .pdf) without showing a window, then exit",
    )
    p.add_argument(
        "--check",
        metavar="PROGRAM",
        help="print the gradient bugs found in PROGRAM (a .py script, run only with --yes; a "
        "saved trace .json/.npz; an expression .expr) without a window, one line per problem "
        "beginning with its kind; exit 1 when a warning or an error was found, 0 when none, 2 "
        "for a usage error",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --check: print the problems as one JSON array (kind, severity, message, "
        "graph, step, nodes)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="with --check: stop a script that runs longer than this and report what it "
        "recorded until then (the run counts as failed: exit 1)",
    )
    p.add_argument(
        "--phase",
        choices=("forward", "backward"),
        help="with --export: show the end of this phase (default: the last step)",
    )
    p.add_argument(
        "--step",
        type=int,
        metavar="N",
        help="with --export: show the graph after step N (1-based; 0 = before any step)",
    )
    p.add_argument(
        "--theme", choices=("light", "dark"), help="the palette (default: the saved one)"
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="run a .py FILE without asking first (it is your code: only for scripts you trust); "
        "--export of a .py needs it",
    )
    p.add_argument(
        "--max-passes",
        type=int,
        metavar="N",
        help="keep the graphs of about N backward passes of a script, a sample of a longer run "
        "(default: the saved limits/scriptMaxPasses, else 1000); every pass is plotted",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="with --export: print a failing script's whole traceback, not just its line",
    )
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    args = _parser().parse_args(list(argv) if argv is not None else None)
    if args.export is not None and args.file is None:
        raise _UsageError("autodiff-viewer: error: --export needs an INPUT file to render\n")
    if args.check is not None and (args.export is not None or args.file is not None):
        raise _UsageError(
            "autodiff-viewer: error: --check takes the PROGRAM to check, alone (no FILE, no "
            "--export)\n"
        )
    if args.json and args.check is None:
        raise _UsageError("autodiff-viewer: error: --json only goes with --check\n")
    if args.timeout is not None and (args.check is None or not args.timeout > 0):
        raise _UsageError("autodiff-viewer: error: --timeout takes seconds (> 0) with --check\n")
    if args.export is None and (args.phase is not None or args.step is not None):
        raise _UsageError("autodiff-viewer: error: --phase and --step only go with --export\n")
    if args.max_passes is not None and args.max_passes < 2:
        raise _UsageError("autodiff-viewer: error: --max-passes must be at least 2\n")
    return args


def _application(headless: bool):
    if headless and not os.environ.get("QT_QPA_PLATFORM"):
        # Rendering a file needs no screen: work on machines without a display too.
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication.instance()
    if app is None:
        app = QtWidgets.QApplication([sys.argv[0] if sys.argv else "autodiff-viewer"])
    app.setApplicationName("autodiff-viewer")
    app.setOrganizationName("autodiff-viewer")
    app.setApplicationDisplayName("autodiff viewer")
    return app


def _no_display() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _remove_stale_run_folders() -> None:
    from viewer.model.scripts.process import remove_stale_folders

    remove_stale_folders()


def build_window(argv: Sequence[str] | None = None):
    """The main window for ``argv`` (FILE and --theme), not shown, without an event loop."""
    args = parse_args(argv or [])
    _remove_stale_run_folders()
    _application(headless=False)
    from viewer.qt.main_window import MainWindow

    window = MainWindow(theme=args.theme)
    if args.max_passes is not None:
        window.document.script_max_passes = args.max_passes
    if args.file:
        window.open_path(args.file, confirm_scripts=not args.yes)
    return window


def _export(args: argparse.Namespace) -> int:
    _application(headless=True)
    from viewer.qt.graph.headless import ExportError, ScriptFailed, ScriptNotConfirmed, export_file

    try:
        out = export_file(
            args.file,
            args.export,
            phase=args.phase,
            step=args.step,
            theme=args.theme,
            run_scripts=args.yes,
        )
    except ScriptNotConfirmed as exc:
        print(
            f"autodiff-viewer: {exc.path.name} is Python code and --export would run it: add "
            "--yes to run it (only for scripts you trust)",
            file=sys.stderr,
        )
        return 2
    except ScriptFailed as exc:
        if args.verbose:
            print(exc.traceback.rstrip(), file=sys.stderr)
            print(f"autodiff-viewer: {exc}", file=sys.stderr)
        else:
            print(f"autodiff-viewer: {exc} (--verbose prints the traceback)", file=sys.stderr)
        return 1
    except ExportError as exc:
        print(f"autodiff-viewer: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: say so, with the traceback, and fail
        import traceback

        traceback.print_exc()
        print(f"autodiff-viewer: internal error while exporting: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv if argv is not None else sys.argv[1:])
    except _UsageError as exc:
        print(str(exc).rstrip(), file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    _remove_stale_run_folders()
    if args.check is not None:
        from viewer.check import run_check

        return run_check(
            args.check,
            run_scripts=args.yes,
            as_json=args.json,
            max_passes=args.max_passes,
            timeout=args.timeout,
        )
    if args.export is not None:
        return _export(args)
    if _no_display():
        print(
            "autodiff-viewer: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are "
            "unset). Run it in a desktop session, or render a file without a window: "
            "autodiff-viewer --export out.png FILE",
            file=sys.stderr,
        )
        return 1
    app = _application(headless=False)
    from viewer.qt.collector import GuiThreadCollector
    from viewer.qt.main_window import MainWindow

    collector = GuiThreadCollector(app)
    collector.start()  # Qt objects in cycles die on the GUI thread, never on a worker's
    window = MainWindow(theme=args.theme)
    if args.max_passes is not None:
        window.document.script_max_passes = args.max_passes
    window.show()
    if args.file:
        window.open_path(args.file, confirm_scripts=not args.yes)
    return finish(int(app.exec()))


def finish(code: int) -> int:
    """The window closed: a thread a script started and left running (not a daemon) would
    keep the process alive with no window, so the app ends past it, saying so."""
    left = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    if not left:
        return code
    names = ", ".join(t.name for t in left[:5])
    print(f"autodiff-viewer: ending past {len(left)} running thread(s): {names}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
