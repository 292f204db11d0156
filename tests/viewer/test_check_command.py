"""``autodiff-viewer --check PROGRAM --yes [--json]`` (the same as ``python -m viewer --check``):
a program's gradient bugs printed without a window, one line per problem beginning with its
kind, or a JSON array; exit 1 when a warning or an error was found, 0 when none, 2 for a usage
error. Run as a user's CI would: a subprocess with no display."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from autodiff import Variable
from autodiff import functions as F
from autodiff.trace import record, trace_to_npz
from viewer.model.checks.problems import KINDS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"

# diverging (lr 3.0) and holding every iteration's graph (history.append(loss))
_PLANTED = """
import numpy as np
import autodiff.functions as F
from autodiff import Parameter, Variable

x = Variable(np.linspace(-1, 1, 8).reshape(8, 1))
t = Variable(3 * x.data + 1)
W = Parameter(np.zeros((1, 1)), name="W")
b = Parameter(np.zeros(1), name="b")
history = []
for i in range(12):
    loss = F.mean_squared_error(F.linear(x, W, b), t)
    W.cleargrad()
    b.cleargrad()
    loss.backward()
    W.data -= {lr} * W.grad.data
    b.data -= {lr} * b.grad.data
    history.append({kept})
print("trained")
{tail}
"""


def _check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("QT_QPA_PLATFORM", None)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env["CI"] = "true"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "viewer", "--check", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def _script(tmp_path: Path, lr: float = 3.0, kept: str = "loss", tail: str = "") -> Path:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(_PLANTED.format(lr=lr, kept=kept, tail=tail)))
    return path


def test_a_planted_bug_is_one_line_per_problem_beginning_with_its_kind(tmp_path):
    done = _check(str(_script(tmp_path)), "--yes")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    kinds = [line.split(" ", 1)[0] for line in lines]
    assert set(kinds) == {"diverging-loss", "graph-held"}
    assert all(k in KINDS for k in kinds)
    assert "trained" not in done.stdout and "trained" in done.stderr  # the script's output
    assert "detectors ran" in done.stderr  # the summary goes to stderr


def test_json_is_an_array_of_problems_and_nothing_else(tmp_path):
    done = _check(str(_script(tmp_path)), "--yes", "--json")
    assert done.returncode == 1, done.stderr
    problems = json.loads(done.stdout)
    assert {p["kind"] for p in problems} == {"diverging-loss", "graph-held"}
    for p in problems:
        assert set(p) == {"kind", "severity", "message", "graph", "step", "nodes"}
        assert p["severity"] == "warning" and isinstance(p["nodes"], list)


def test_the_held_graphs_name_the_scripts_global_that_holds_the_losses(tmp_path):
    """history.append(loss): the JSON's graph-held message names the list and the statement
    that fills it; a loss kept in a function's local list names no global."""
    done = _check(str(_script(tmp_path, lr=0.1)), "--yes", "--json")
    assert done.returncode == 1, done.stderr
    (held,) = [p for p in json.loads(done.stdout) if p["kind"] == "graph-held"]
    line = _PLANTED.splitlines().index("    history.append({kept})") + 1
    assert f"held by `history` (a list, line {line}: history.append(loss))" in held["message"]
    assert "pass #1" in held["message"]
    local = tmp_path / "local.py"
    body = textwrap.indent(textwrap.dedent(_PLANTED.format(lr=0.1, kept="loss", tail="")), "    ")
    local.write_text("def main():\n" + body + "\nmain()\n")
    done = _check(str(local), "--yes", "--json")
    (held,) = [p for p in json.loads(done.stdout) if p["kind"] == "graph-held"]
    assert "held by" not in held["message"] and "history.append(loss)" in held["message"]


def test_a_correct_script_prints_nothing_and_exits_0(tmp_path):
    done = _check(str(_script(tmp_path, lr=0.1, kept="float(loss.data)")), "--yes")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert "No problems found" in done.stderr
    done = _check(str(_script(tmp_path, lr=0.1, kept="float(loss.data)")), "--yes", "--json")
    assert (done.returncode, json.loads(done.stdout)) == (0, [])


def test_a_failing_script_still_reports_what_it_found_and_exits_1(tmp_path):
    done = _check(str(_script(tmp_path, tail="raise RuntimeError('boom')")), "--yes")
    assert done.returncode == 1
    assert {line.split(" ", 1)[0] for line in done.stdout.splitlines()} == {
        "diverging-loss",
        "graph-held",
    }
    assert "the program failed" in done.stderr and "RuntimeError: boom" in done.stderr


def test_a_script_is_not_run_without_yes(tmp_path):
    path = tmp_path / "touch.py"
    marker = tmp_path / "ran"
    path.write_text(f"open({str(marker)!r}, 'w').close()\n")
    done = _check(str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert "--yes" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("name", ["missing.py", "missing.json", "missing.expr"])
def test_a_missing_file_is_a_usage_error(tmp_path, name):
    done = _check(str(tmp_path / name), "--yes")
    assert done.returncode == 2 and "no such file" in done.stderr


def test_an_unknown_suffix_and_an_unreadable_trace_are_usage_errors(tmp_path):
    other = tmp_path / "notes.md"
    other.write_text("hello")
    done = _check(str(other))
    assert done.returncode == 2 and "unknown file type" in done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "nope"')
    done = _check(str(broken))
    assert done.returncode == 2 and "cannot read broken.json" in done.stderr
    bad = tmp_path / "bad.expr"
    bad.write_text("y = __import__('os')\n")
    done = _check(str(bad))
    assert done.returncode == 2 and "not a program of the expression language" in done.stderr


def test_an_expression_is_checked_without_running_python(tmp_path):
    done = _check(str(EXAMPLES / "sphere.expr"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert "diverging-loss" in done.stderr  # the run detectors say why they could not run


def test_saved_traces_json_and_npz_are_checked(tmp_path):
    with record() as t:
        x = Variable(np.array([1.0, 2.0]), name="x")
        for _ in range(2):  # two backward passes: two graphs
            y = F.sum(F.tanh(x) * x)
            x.cleargrad()
            y.backward()
    t.to_json(tmp_path / "t.json")
    trace_to_npz(t, tmp_path / "t.npz")
    for name in ("t.json", "t.npz"):
        done = _check(str(tmp_path / name), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == []
        assert "of 2 graphs" in done.stderr


def test_check_needs_no_display_and_imports_no_qt(tmp_path):
    path = _script(tmp_path, lr=0.1, kept="float(loss.data)")
    code = (
        "import sys\n"
        "from viewer.app import main\n"
        f"code = main(['--check', {str(path)!r}, '--yes'])\n"
        "assert 'PySide6' not in sys.modules and 'pyqtgraph' not in sys.modules\n"
        "sys.exit(code)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
    env["PYTHONPATH"] = str(ROOT)
    env["CI"] = "true"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_check_refuses_a_second_file_and_json_alone():
    from viewer.app import main

    assert main(["--check", "a.expr", "b.expr"]) == 2
    assert main(["--json", "a.expr"]) == 2
    assert main(["--check", "a.expr", "--export", "out.png"]) == 2


def test_a_hanging_script_is_stopped_by_timeout_and_fails(tmp_path):
    path = tmp_path / "hang.py"
    path.write_text("import numpy as np\nprint('started', flush=True)\nwhile True:\n    pass\n")
    done = _check(str(path), "--yes", "--timeout", "2")
    assert done.returncode == 1, done.stderr
    assert "hang.py was stopped after 2 s (--timeout)" in done.stderr
    # it recorded nothing: no line may say the program was found clean
    assert "No problems found" not in done.stderr
    assert "Nothing was checked: no detector ran" in done.stderr
    assert done.stdout == ""
    bad = _check(str(path), "--yes", "--timeout", "0")
    assert bad.returncode == 2 and "--timeout" in bad.stderr
