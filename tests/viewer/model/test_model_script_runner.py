"""Running a user's script with recording on: results, failures, cancel, restored state."""

import os
import sys
import textwrap
import time

import pytest

from viewer.model.document.examples import list_examples
from viewer.model.scripts.run import ScriptRun, run_script

GOOD = """
import sys
import numpy as np
from autodiff import Variable
import autodiff.functions as F

print("argv", sys.argv[1:])
x = Variable(np.array(0.5), name="x")
for i in range(3):
    y = F.square(F.exp(F.square(x)))
    y.name = "y"
    x.cleargrad()
    y.backward()
print("grad", float(x.grad.data))
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_good_script(tmp_path):
    path = write(tmp_path, "good.py", GOOD)
    cwd, argv = os.getcwd(), list(sys.argv)
    result = ScriptRun(path, ["--fast"]).run()
    assert result.ok and not result.cancelled and result.error is None
    assert result.exit_code == 0
    assert "argv ['--fast']" in result.stdout
    assert "grad 3.29744254140025" in result.stdout
    assert len(result.graphs) == 3  # one per backward() call
    assert all(g.backward_pass >= 0 for g in result.graphs)
    assert result.graphs[-1].title.endswith("from y")
    view = result.graphs[-1].view(result.trace)
    assert [s.phase for s in view.steps] == ["forward"] * 3 + ["backward"] * 3
    assert [s.index for s in view.steps] == list(range(6))
    assert os.getcwd() == cwd and sys.argv == argv
    assert "ran in" in result.summary


def test_script_runs_in_its_folder(tmp_path):
    (tmp_path / "data.txt").write_text("42")
    path = write(tmp_path, "reads.py", "with open('data.txt') as f:\n    print(f.read())\n")
    assert run_script(path).stdout == "42\n"


def test_failing_script_gives_a_traceback_and_no_crash(tmp_path):
    path = write(
        tmp_path,
        "fails.py",
        """
        def helper():
            raise ValueError("bad value in the user's script")

        helper()
        """,
    )
    result = run_script(path)
    assert not result.ok and not result.cancelled
    assert result.error.startswith("Traceback (most recent call last):")
    assert "fails.py" in result.error and "helper" in result.error
    assert "ValueError: bad value in the user's script" in result.error
    assert "runpy" not in result.error
    assert "failed: ValueError" in result.summary


def test_sys_exit(tmp_path):
    assert run_script(write(tmp_path, "ok.py", "import sys\nsys.exit(0)\n")).ok
    result = run_script(write(tmp_path, "no.py", "import sys\nsys.exit(3)\n"))
    assert not result.ok and result.exit_code == 3


def test_syntax_error_in_script(tmp_path):
    result = run_script(write(tmp_path, "syntax.py", "def (:\n"))
    assert not result.ok and "SyntaxError" in result.error


def test_missing_script(tmp_path):
    result = run_script(tmp_path / "absent.py")
    assert not result.ok and "no such script" in result.error


@pytest.mark.parametrize(
    "body",
    [
        # busy in the engine: cancelled by the observer at the next operation
        """
        import numpy as np
        from autodiff import Variable
        import autodiff.functions as F
        x = Variable(np.array(0.5))
        while True:
            y = F.sin(x)
        """,
        # busy in plain Python: interrupted between bytecodes
        """
        n = 0
        while True:
            n += 1
        """,
        # a script that swallows exceptions still stops
        """
        while True:
            try:
                sum(range(1000))
            except Exception:
                pass
        """,
    ],
)
def test_cancel(tmp_path, body):
    run = ScriptRun(write(tmp_path, "loop.py", body))
    seen = []
    run.finished.connect(seen.append)
    run.start()
    time.sleep(0.2)
    assert run.running
    run.cancel()
    assert run.wait(60), "the script did not stop"
    assert run.result.cancelled and not run.result.ok
    assert seen == [run.result]
    assert "cancelled" in run.result.summary


def test_output_is_captured_per_thread(tmp_path, capsys):
    path = write(tmp_path, "talk.py", "print('from the script')\n")
    chunks = []
    run = ScriptRun(path)
    run.output_written.connect(chunks.append)
    result = run.run()
    print("from the test")
    assert result.stdout == "from the script\n"
    assert "".join(chunks) == "from the script\n"
    assert capsys.readouterr().out == "from the test\n"


def test_script_without_backward_offers_its_last_outputs(tmp_path):
    path = write(
        tmp_path,
        "fwd.py",
        """
        import numpy as np
        from autodiff import Variable
        import autodiff.functions as F
        a = F.exp(Variable(np.array(1.0)))
        b = F.sin(Variable(np.array(2.0)))
        """,
    )
    result = run_script(path)
    assert result.ok
    assert [g.backward_pass for g in result.graphs] == [-1, -1]
    assert {g.title.split()[1] for g in result.graphs} == {"Exp", "Sin"}


def test_namespace_is_dropped_before_the_audit(tmp_path):
    import weakref

    refs = []
    path = write(
        tmp_path,
        "keeps.py",
        """
        import numpy as np
        from autodiff import Variable
        import autodiff.functions as F

        def f(v):
            return F.exp(v)

        x = Variable(np.array(1.0))
        y = f(x)
        y.backward()
        """,
    )
    result = run_script(path)
    assert result.ok
    for nid in result.trace.variables:
        obj = result.trace.live(nid)
        if obj is not None:
            refs.append(weakref.ref(obj))
    assert refs == []  # the module-level graph did not outlive the run


LEAK_EXAMPLES = sorted((e for e in list_examples() if e.category == "leaks"), key=lambda e: e.stem)


@pytest.mark.parametrize("example", LEAK_EXAMPLES, ids=lambda e: e.stem)
def test_leak_examples_report_what_the_leak_audit_reports(example):
    from autodiff import leaks
    from viewer.model.document.document import Document

    expected = leaks.run_script(str(example.path))
    doc = Document()
    shown = doc.run_script(example.path)
    assert doc.script_result.ok
    report = doc.leak_report
    assert report is not None
    got = sorted((s.node_id, s.reason) for s in report.survivors)
    assert got == sorted((s.node_id, s.reason) for s in expected.survivors)
    if shown:
        flagged = {
            nid
            for nid, overlays in doc.scene.overlays.items()
            if any(o.kind == "leak" for o in overlays)
        }
        assert flagged == {s.node_id for s in report.survivors}
    if example.stem in ("clean_graph", "no_grad"):
        assert report.clean
    else:
        assert not report.clean


def test_a_graph_on_screen_is_found_by_its_view_not_by_its_title(tmp_path):
    import dataclasses

    result = ScriptRun(write(tmp_path, "good.py", GOOD)).run()
    same = [dataclasses.replace(g, title="the same title") for g in result.graphs]
    result = dataclasses.replace(result, graphs=same, _views={})
    views = [result.view(i) for i in range(len(result.graphs))]
    assert [result.graph_index(v) for v in views] == [0, 1, 2]
    assert result.graph_index(result.trace) == -1 and result.graph_index(None) == -1


def test_a_run_leaves_its_thread_as_it_found_it(tmp_path):
    """The run drops a cancel that has not landed without leaving CPython's eval breaker set
    for good (PyThreadState_SetAsyncExc(id, NULL) did: every call of the process then went
    through the pending-work check, and cProfile's next call never returned). A fresh
    interpreter, so that a hang fails by its timeout instead of holding the tests."""
    script = write(tmp_path, "empty.py", "x = 1\n")
    code = textwrap.dedent(
        f"""
        import cProfile
        from viewer.model.scripts.run import ScriptRun
        run = ScriptRun({str(script)!r})
        run.prepare_view = False
        assert run.run().ok
        def add(a, b):
            return a + b
        profile = cProfile.Profile()
        profile.enable()
        add(1, 2)  # a Python function's entry, where the set breaker looped
        profile.disable()
        print("profiled")
        """
    )
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("profiled")
