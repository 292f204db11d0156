"""Leaks: which recorded engine objects are still alive after release, and who holds them.

The audit itself is :func:`autodiff.trace._audit.audit` (also :meth:`autodiff.trace.Trace.audit`);
see that module for what it answers and how. Here it is with what runs a whole script:

``python -m autodiff.leaks script.py`` runs a script with recording, drops its namespace as the
interpreter would at exit, and prints what survived (exit status 1 when anything did).
"""

from __future__ import annotations

import builtins
import gc
import sys
import types

from autodiff import trace as trace_module
from autodiff.trace._audit import LeakReport, Survivor, audit

__all__ = ["LeakReport", "Survivor", "audit", "main", "run_script"]


# =============================================================================
# Running a script
# =============================================================================
def run_script(path: str, argv: list[str] | None = None) -> LeakReport:
    """Run ``path`` as ``__main__`` with recording, drop its namespace, audit what survived.

    The cycle collector is paused from the start of the script to the end of the audit, so
    that reference cycles are reported rather than collected by chance on the way.
    """
    with open(path, encoding="utf-8") as f:
        source = f.read()
    code = compile(source, path, "exec")
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    saved_main = sys.modules.get("__main__")
    saved_argv = sys.argv
    sys.argv = [path, *(argv or [])]
    sys.modules["__main__"] = module
    # Paused collector: what reference counting alone does not free is still there to be found.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            with trace_module.record() as t:
                exec(code, module.__dict__)
        finally:
            sys.argv = saved_argv
            if saved_main is not None:
                sys.modules["__main__"] = saved_main
            # Drop the script's names as the interpreter does at exit.
            module.__dict__.clear()
            del module, code
        return t.audit()
    finally:
        if was_enabled:
            gc.enable()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m autodiff.leaks script.py [args...]")
        print("Runs the script with recording, drops its namespace, and lists what survived.")
        return 0 if args else 2
    report = run_script(args[0], args[1:])
    print(report)
    return 1 if report.survivors else 0


if __name__ == "__main__":
    sys.exit(main())
