"""A script's forward-only work is counted, not recorded in full: the run's line, the graphs
kept as a sample (with the values the program printed), evaluation loops without no_grad(),
and a recording that stays bounded while a loop never calls backward."""

from __future__ import annotations

import gc
import math
import textwrap

import numpy as np
import pytest

import autodiff.functions as F
from autodiff.core import Variable
from viewer.model.document.document import Document
from viewer.model.scripts import pass_recording
from viewer.model.scripts.pass_recording import PassRecording
from viewer.model.scripts.result_schema import read_meta
from viewer.model.scripts.run import ScriptRun

FLOOD = """
import numpy as np
import autodiff.functions as F
from autodiff import Variable

x = Variable(np.array(1.0), name="x")
for i in range({ops}):
    y = F.sin(x * {scale})
    if i < 3:
        print("thrown away", i, repr(float(y.data)))
for step in range(4):
    loss = F.sin(x) * x
    x.cleargrad()
    loss.backward()
    x.data = x.data - 0.01 * x.grad.data
"""

EVALUATION = """
import numpy as np
import autodiff.functions as F
from autodiff import models, optimizers

np.random.seed(0)
x = np.random.rand(20, 1)
t = np.sin(x)
model = models.MLP((5, 1))
optimizer = optimizers.SGD(0.1).setup(model)
for epoch in range({epochs}):
    loss = F.mean_squared_error(t, model(x))
    model.cleargrads()
    loss.backward()
    optimizer.update()
    for k in range({forwards}):  # evaluation without no_grad()
        test_loss = F.mean_squared_error(t, model(x))
"""


def _script(tmp_path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return str(path)


def _printed_values(stdout: str) -> list[float]:
    return [float(line.split()[-1]) for line in stdout.splitlines() if line.startswith("thrown")]


def test_a_flood_of_throwaway_operations_is_one_line_and_a_sample(tmp_path):
    path = _script(tmp_path, "flood.py", FLOOD.format(ops=3000, scale=2.0))
    result = ScriptRun(path).run()
    assert result.ok, result.error
    summary = result.forward_only
    # each throwaway iteration is two operations (Mul, Sin) in one graph; the first 3 are
    # the sample and the last is still held (by ``y``) when the script ends
    assert summary["graphs"] == 3000 - 3 - 1 and summary["sampled"] == 3
    assert summary["ops"] == {"Mul": 2996, "Sin": 2996}
    assert "5,992 forward-only operations" in result.sampling
    assert "2,996 graphs that no backward reached" in result.sampling
    titles = [g.title for g in result.graphs]
    assert [t.startswith("forward only #") for t in titles] == [True] * 3 + [False] * 4
    printed = _printed_values(result.stdout)
    for k in range(3):  # the sample shows what the program computed
        view = result.view(k)
        sin = [s for s in view.steps if s.op == "Sin"]
        assert len(sin) == 1 and len(view.steps) == 2
        assert float(sin[0].values[0].array) == printed[k]
    last = result.view(len(result.graphs) - 1)  # the passes are as before
    assert [s.op for s in last.steps if s.phase == "forward"] == ["Sin", "Mul"]


def test_an_evaluation_loop_without_no_grad_is_counted_not_stored(tmp_path):
    def run(forwards: int):
        path = _script(
            tmp_path, f"eval{forwards}.py", EVALUATION.format(epochs=4, forwards=forwards)
        )
        result = ScriptRun(path).run()
        assert result.ok, result.error
        return result

    few, many = run(5), run(50)
    # the kept steps do not grow with the evaluation forwards
    assert len(many.trace.steps) == len(few.trace.steps)
    summary = many.forward_only
    # every evaluation forward but the 3 sampled and the one still held at the end
    assert summary["graphs"] == 4 * 50 - 3 - 1
    assert summary["through_parameters"] == summary["graphs"]
    assert "ran Parameters without no_grad()" in many.sampling


def test_a_run_without_forward_only_work_has_no_line(tmp_path):
    path = _script(tmp_path, "train.py", FLOOD.format(ops=0, scale=1.0))
    result = ScriptRun(path).run()
    assert result.ok and result.forward_only is None
    assert "forward-only" not in result.sampling
    assert not any(g.title.startswith("forward only") for g in result.graphs)


def test_a_loop_that_never_calls_backward_stays_bounded(monkeypatch):
    monkeypatch.setattr(pass_recording, "_FLOOD_ENTRIES", 3_000)
    monkeypatch.setattr(pass_recording, "_WATCH_S", 0.002)
    was = gc.isenabled()
    gc.disable()
    try:
        x = Variable(np.array(0.5))
        rec = PassRecording(4096)
        most = 0
        with rec:
            for i in range(60_000):
                F.sin(x)
                if i % 500 == 0:
                    most = max(most, len(rec.head.tables._tape))
        # about 3 tape entries an operation: 180 000 without compaction
        assert most < 60_000
        assert rec.forward_only.operations >= 60_000 - 3
    finally:
        if was:
            gc.enable()


def test_the_worker_sends_the_summary_and_the_sample(tmp_path):
    path = _script(tmp_path, "flood.py", FLOOD.format(ops=2000, scale=0.5))
    doc = Document()
    said: list[str] = []
    doc.status_changed.connect(lambda text, *rest: said.append(str(text)))
    assert doc.run_script(path)
    # the samples come first in the list, but the script did call backward
    assert not doc.script_result.never_called_backward
    assert not any("never called backward" in text for text in said)
    result = doc.script_result
    assert result is not None and result.ok
    assert result.forward_only["graphs"] == 2000 - 3 - 1
    assert "3,992 forward-only operations" in result.sampling
    printed = _printed_values(result.stdout)
    view = result.view(0)
    sin = [s for s in view.steps if s.op == "Sin"]
    assert float(sin[0].values[0].array) == printed[0]


@pytest.mark.parametrize(
    "bad",
    [
        "[1, 2]",
        '{"operations": "many"}',
        '{"operations": 3, "ops": ["Sin"]}',
        '{"operations": 3, "ops": {"Sin": 1.5}}',
    ],
)
def test_a_malformed_summary_in_the_result_is_refused(tmp_path, bad):
    (tmp_path / "result.json").write_text(
        '{"ok": true, "graphs": [], "forward_only": ' + bad + "}", encoding="utf-8"
    )
    with pytest.raises(ValueError, match="forward_only"):
        read_meta(tmp_path)


def test_a_summary_reads_back(tmp_path):
    (tmp_path / "result.json").write_text(
        '{"ok": true, "graphs": [], "forward_only": {"operations": 4, "graphs": 2, '
        '"through_parameters": 1, "sampled": 0, "ops": {"Sin": 4}}}',
        encoding="utf-8",
    )
    meta = read_meta(tmp_path)
    assert meta.forward_only["ops"] == {"Sin": 4} and meta.forward_only["graphs"] == 2
    assert not math.isnan(meta.forward_only["operations"])
