"""The worker's memory for every bundled example script: does each run under the default limit?

    python bench/script_memory.py [--memory-mb N] [--only NAME ...] [--json FILE]

Each ``resources/examples`` script (the ``leaks`` folder's too) runs as the app runs it, in a
:class:`~viewer.model.scripts.process.ScriptProcess` with the memory limit ``--memory-mb``
(default: the app's, :func:`~viewer.model.scripts.process.default_memory_mb`; 0: none). While
it runs, the worker's ``/proc/<pid>/status`` is read every 10 ms: its peak resident size
(``VmHWM``) and its peak address space (``VmPeak``, what ``RLIMIT_AS`` counts), as last seen
before it ended. A script that needs more than the limit is reported failed, with the
worker's message.

Measured (a busy 2-core machine, limit 800 MiB): all 19 run; peak resident size 53-59 MB for
most, linear_regression 73, rnn_bptt 66, spiral 91, sine_regression 146; peak address space
303-331 MB.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viewer.model.scripts.process import ScriptProcess, default_memory_mb  # noqa: E402

EXAMPLES = ROOT / "resources" / "examples"


def _status(pid: int) -> dict[str, int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmPeak"):
            found[key] = int(value.split()[0])
    return found


def measure(path: Path, memory_mb: int) -> dict:
    process = ScriptProcess(path, memory_mb=memory_mb)
    began = time.perf_counter()
    process.start()
    seen: dict[str, int] = {}
    while not process.wait(0.01):
        if process.pid is not None:
            seen.update(_status(process.pid) or {})
    result = process.result
    assert result is not None
    return {
        "name": str(path.relative_to(EXAMPLES)),
        "ok": bool(result.ok),
        "error": result.error_summary,
        "wall_s": time.perf_counter() - began,
        "rss_peak_mb": seen.get("VmHWM", 0) / 1024,
        "vm_peak_mb": seen.get("VmPeak", 0) / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memory-mb", type=int, default=default_memory_mb(), help="0: no limit")
    p.add_argument("--only", nargs="*", help="only these scripts (file names)")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)
    rows = []
    for path in sorted(EXAMPLES.rglob("*.py")):
        if args.only and path.name not in args.only:
            continue
        rows.append(measure(path, args.memory_mb))
        r = rows[-1]
        print(
            f"{r['name']:<36}{'ok' if r['ok'] else 'FAILED':>7}{r['wall_s']:>7.1f} s"
            f"{r['rss_peak_mb']:>9.0f} MB rss{r['vm_peak_mb']:>9.0f} MB vm  {r['error']}",
            flush=True,
        )
    print(f"limit: {args.memory_mb} MiB (0: none)")
    if args.json:
        Path(args.json).write_text(json.dumps({"memory_mb": args.memory_mb, "rows": rows}))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
