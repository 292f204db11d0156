"""The view tells the truth at every step (issue 10, point 1).

Multi-iteration scripts print what they hold (leaf values before each forward, the gradient a
leaf holds before backward, the output, the contributions and the gradient after backward);
the numbers on every label, tooltip and inspector of every step of every graph the app offers
must be exactly those, never a value from another iteration or from the live objects.
"""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest

from autodiff.trace import NodeState
from viewer.model import Document
from viewer.model.panels.inspector import inspect
from viewer.model.panels.legend import VARIABLE_STATES
from viewer.model.scripts import pass_recording
from viewer.model.scripts.run import ScriptRun

_SCALAR = """
import json
import numpy as np
from autodiff import Variable
import autodiff.functions as F

x = Variable(np.array(1.0), name="x")
for v in (1.0, 2.0, 0.5):
    x.data = np.array(v)
    {clear}
    before = None if x.grad is None else float(x.grad.data)
    y = F.sin(x) * x
    y.name = "y"
    y.backward()
    print(json.dumps({{"x": v, "before": before, "y": float(y.data),
                      "mul": float(np.sin(v)), "sin": float(np.cos(v) * v),
                      "after": float(x.grad.data)}}))
"""

_BY_HAND = """
import json
import numpy as np
from autodiff import Variable
import autodiff.functions as F

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 2))
T = rng.standard_normal((4, 1))
w = Variable(rng.standard_normal((2, 1)), name="w")
for i in range(3):
    before = None if w.grad is None else w.grad.data.ravel().tolist()
    record = {"w": w.data.ravel().tolist(), "before": before}
    loss = F.mean_squared_error(F.matmul(X, w), T)
    loss.name = "loss"
    w.cleargrad()  # after the forward: the old gradient is held until here
    loss.backward()
    record.update(loss=float(loss.data), after=w.grad.data.ravel().tolist())
    print(json.dumps(record))
    w.data = w.data - 0.1 * w.grad.data
"""

_OPTIMIZER = """
import json
import numpy as np
import autodiff.functions as F
from autodiff import models, optimizers

np.random.seed(3)
X = np.random.randn(5, 2)
T = np.random.randn(5, 1)
model = models.MLP((3, 1))
opt = optimizers.SGD(lr=0.2).setup(model)
for i in range(3):
    before = {p.name: None if p.grad is None else p.grad.data.ravel().tolist()
              for p in model.params()}
    loss = F.mean_squared_error(model(X), T)
    loss.name = "loss"
    params = {p.name: p.data.ravel().tolist() for p in model.params()}  # W made lazily
    model.cleargrads()  # as the book does: after the forward, before backward
    loss.backward()
    grads = {p.name: p.grad.data.ravel().tolist() for p in model.params()}
    print(json.dumps({"params": params, "before": before, "loss": float(loss.data),
                      "grads": grads}))
    opt.update()
"""


def _run(tmp_path, source: str) -> tuple[Document, list[dict]]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source))
    doc = Document()
    assert doc.run_script(path), doc.last_error
    result = doc.script_result
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(result.graphs) == len(records) == 3
    return doc, records


def _numbers(text: str) -> list[float]:
    return [float(t) for t in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


def _label_parts(label: str) -> tuple[str, str | None, str | None]:
    """(name, value text, gradient text) of a variable's label."""
    lines = label.split("\n")
    grad = lines.pop()[2:] if lines and lines[-1].startswith("∇ ") else None
    name = lines[0] if lines else ""
    value = lines[-1] if len(lines) > 1 else None
    return name, value, grad


def _close(text: str | None, expected: float) -> bool:
    return text is not None and abs(float(text) - expected) <= 5e-4 * max(1.0, abs(expected))


def _walk(doc: Document, graph: int):
    """(step, frame, scene) for every step of script graph ``graph``, from -1 to the end."""
    assert doc.show_script_graph(graph)
    scene = doc.scene
    for step in range(-1, scene.n_steps):
        doc.playback.seek(step)
        yield step, doc.frame(), scene


@pytest.mark.parametrize("clear", [True, False], ids=["cleargrad", "cleargrad forgotten"])
def test_scalar_leaf_across_iterations(tmp_path, clear):
    doc, records = _run(tmp_path, _SCALAR.format(clear="x.cleargrad()" if clear else ""))
    for k, rec in enumerate(records):
        x_idx = y_idx = None
        seen_seed = False
        first_backward = None
        for step, frame, scene in _walk(doc, k):
            if x_idx is None:
                x_idx, y_idx = scene.names.index("x"), scene.names.index("y")
            phase = frame.phase
            if phase == "backward" and first_backward is None:
                first_backward = step
            _, value, grad = _label_parts(frame.labels[x_idx])
            # the leaf holds this iteration's value at every step, -1 included
            assert _close(value, rec["x"]), (k, step, frame.labels[x_idx])
            info = doc.inspect(int(scene.node_ids[x_idx]))
            assert float(info.value.array) == rec["x"]
            state = scene.state(x_idx, step)
            if first_backward is None:  # forward: what it held before backward
                if rec["before"] is None:
                    assert grad is None and info.grad is None, (k, step)
                    assert state is NodeState.VALUE
                else:
                    assert _close(grad, rec["before"]) and state is NodeState.GRAD_CARRIED
                    assert float(info.grad.array) == rec["before"]
                    assert f"backward #{k}" in info.note and "adds to it" in info.note
                    assert "carried over" in scene.node_tooltip(x_idx, step)
            elif step == first_backward:  # Mul: its contribution sin(x)
                expected = (rec["before"] or 0.0) + rec["mul"]
                assert _close(grad, expected) and info.grad.array == pytest.approx(expected)
                _, _, y_grad = _label_parts(frame.labels[y_idx])
                assert y_grad == "1", "the output shows its seed gradient"
                assert doc.inspect(int(scene.node_ids[y_idx])).grad.array == 1.0
                seen_seed = True
            if step == scene.n_steps - 1:
                assert _close(grad, rec["after"]) and state is NodeState.GRAD
                assert float(info.grad.array) == pytest.approx(rec["after"], abs=1e-15)
            _, y_value, _ = _label_parts(frame.labels[y_idx])
            if step >= 1:
                assert _close(y_value, rec["y"])
        assert seen_seed


def test_parameters_updated_by_hand(tmp_path):
    doc, records = _run(tmp_path, _BY_HAND)
    for k, rec in enumerate(records):
        for step, frame, scene in _walk(doc, k):
            w = scene.names.index("w")
            info = doc.inspect(int(scene.node_ids[w]))
            # the update made after backward #k shows from graph k + 1 on, never in graph k
            np.testing.assert_array_equal(info.value.array.ravel(), rec["w"])
            assert _numbers(frame.labels[w].split("\n")[2]) == pytest.approx(rec["w"], rel=1e-3)
            if frame.phase != "backward":
                if rec["before"] is None:
                    assert info.grad is None
                else:  # cleargrad() comes after the forward: the old gradient is still held,
                    # and no backward adds to it: a previous gradient, not a carried one
                    np.testing.assert_array_equal(info.grad.array.ravel(), rec["before"])
                    assert info.state is NodeState.GRAD_PREVIOUS
            if step == scene.n_steps - 1:
                np.testing.assert_allclose(info.grad.array.ravel(), rec["after"], rtol=1e-14)
                loss = scene.names.index("loss")
                assert _close(_label_parts(frame.labels[loss])[1], rec["loss"])


def test_parameters_updated_by_an_optimizer(tmp_path):
    doc, records = _run(tmp_path, _OPTIMIZER)
    for k, rec in enumerate(records):
        for step, frame, scene in _walk(doc, k):
            for name, expected in rec["params"].items():
                i = scene.names.index(name)  # parameters are named with their layer: l0.W
                info = doc.inspect(int(scene.node_ids[i]))
                np.testing.assert_array_equal(info.value.array.ravel(), expected)
                if frame.phase != "backward":  # the forward runs before cleargrads()
                    held = rec["before"][name]
                    if held is None:
                        assert info.grad is None, (k, step, name)
                    else:
                        np.testing.assert_array_equal(info.grad.array.ravel(), held)
                        assert info.state is NodeState.GRAD_PREVIOUS
                if step == scene.n_steps - 1:
                    np.testing.assert_allclose(
                        info.grad.array.ravel(), rec["grads"][name], rtol=1e-12, atol=1e-15
                    )
                    if len(expected) <= 4:
                        _, value, grad = _label_parts(frame.labels[i])
                        assert _numbers(value) == pytest.approx(expected, rel=1e-3, abs=1e-4)
                        assert _numbers(grad) == pytest.approx(
                            rec["grads"][name], rel=1e-3, abs=1e-4
                        )


def test_constants_show_no_gradient_and_leaves_show_from_the_start():
    doc = Document()
    assert doc.run_expression("y = x * 3 + 2")
    scene = doc.scene
    constants = [i for i, nid in enumerate(scene.node_ids) if doc.trace.node(int(nid))["constant"]]
    assert len(constants) == 2
    for step in range(-1, scene.n_steps):
        frame = scene.frame(step)
        for i in constants:
            assert "∇" not in frame.labels[i]
            assert inspect(doc.trace, int(scene.node_ids[i]), step).grad is None
        x = scene.names.index("x")
        assert _close(_label_parts(frame.labels[x])[1], 1.0)  # from step -1 on
    last = scene.n_steps - 1
    passing = [
        inspect(doc.trace, int(scene.node_ids[i]), step).passing
        for i in constants
        for step in range(last + 1)
    ]
    assert any(passing), "the gradient that reached a constant's slot is shown, as not stored"


def test_a_graph_let_go_after_its_last_step_is_not_drawn_freed(tmp_path):
    # the QA walk-through: a script's last graph showed everything "freed" at its last step,
    # hiding the final gradients, because the objects died after it (the script ended)
    path = tmp_path / "main.py"
    path.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "def main():\n    x = Variable(np.array(0.5), name='x')\n"
        "    y = F.square(F.exp(x))\n    y.backward()\n    print(float(x.grad.data))\nmain()\n"
    )
    doc = Document()
    assert doc.run_script(path)
    printed = float(doc.script_result.stdout.split()[-1])
    scene = doc.scene
    last = scene.n_steps - 1
    codes = scene.frame(last).state_codes
    assert "freed" not in {scene.frame(last).state_names[c] for c in codes}
    x = scene.names.index("x")
    doc.playback.seek(last)
    assert doc.inspect(int(scene.node_ids[x])).grad.array == pytest.approx(printed, abs=0)


def test_the_seed_of_a_create_graph_backward_appears_with_the_backward():
    from autodiff import Variable, trace

    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**3
        y.backward(create_graph=True)
    # the pass's first step: under create_graph the gradient's forward steps come first
    first_backward = t.steps_of_pass(0)[0]
    seed = next(s for s in t.steps if s.phase == "backward").output_grads[0]
    made = [n for n in t.variables if t.creator_of(n) < 0 and not t.node(n)["constant"]]
    late = [n for n in made if t.node(n)["name"] != "x"]
    assert late, "the seed is a graph node under create_graph"
    for n in late:
        assert t.state_at(n, first_backward - 1) is NodeState.NOT_COMPUTED
    assert seed is not None


def test_a_gradient_the_program_empties_before_backward_is_previous_not_carried(tmp_path):
    # The book's loop empties the gradients between the forward and the backward: during the
    # forward the old gradient is held, but no backward adds to it, so it is drawn as a
    # previous gradient (no alarm), and the tooltip, the inspector and the legend say so.
    doc, records = _run(tmp_path, _BY_HAND)
    meaning = {e.state: e.meaning for e in VARIABLE_STATES}["grad_previous"]
    assert "empties it" in meaning and "nothing adds to it" in meaning
    notes = []
    for k, rec in enumerate(records):
        if rec["before"] is None:
            continue
        for step, frame, scene in _walk(doc, k):
            if frame.phase == "backward":
                break
            w = scene.names.index("w")
            info = doc.inspect(int(scene.node_ids[w]))
            assert info.state is NodeState.GRAD_PREVIOUS
            assert frame.state_names[frame.state_codes[w]] == "grad_previous"
            assert info.note.startswith(f"previous gradient, from backward #{k}")
            assert "empties it" in info.note and "adds to it" not in info.note, info.note
            tooltip = scene.node_tooltip(w, step)
            assert "grad previous" in tooltip and info.note in tooltip
            assert "carried" not in tooltip
            notes.append(info.note)
    assert notes, "no forward step held a previous gradient"


_TRUNCATED = """
import json
import numpy as np
from autodiff import Variable
import autodiff.functions as F

xs = [[0.5, -0.25, 1.0], [0.75, 0.1, -0.6], [-0.3, 0.9, 0.2]]
w = Variable(np.array(0.7), name="w")
h = Variable(np.array(0.1), name="h0")
for k in range(3):
    start = h
    loss = 0
    states = []
    for t in range(3):
        h = F.tanh(h * w + xs[k][t])
        h.name = f"h{k}_{t}"
        states.append(float(h.data))
        loss = loss + h * h
    loss.name = "loss"
    w.cleargrad()
    loss.backward()
    print(json.dumps({"states": states, "w_grad": float(w.grad.data),
                      "start_grad": None if start.grad is None else float(start.grad.data)}))
    loss.unchain_backward()
    w.data = w.data - 0.1 * w.grad.data
"""


def test_truncated_backprop_draws_the_window_it_cut_as_it_was_left(tmp_path):
    """Each window after the first also shows the window its state was cut from, greyed:
    with the values the program printed for that window, at every step, never stepped
    through; the state it starts from gets the gradient the program printed."""
    doc, records = _run(tmp_path, _TRUNCATED)
    for k, rec in enumerate(records):
        for step, frame, scene in _walk(doc, k):
            detached = scene.detached
            assert not detached[frame.current_nodes].any(), (k, step)
            for i, name in enumerate(scene.names):
                if not name.startswith("h") or name == "h0":
                    continue
                window, t = (int(p) for p in name[1:].split("_"))
                _, value, grad = _label_parts(frame.labels[i])
                if value is None:  # not made yet: this window's own, never the cut-off one
                    assert not detached[i] and window == k, (k, step, name)
                    assert scene.state(i, step) is NodeState.NOT_COMPUTED
                    continue
                assert _close(value, records[window]["states"][t]), (k, step, name)
                # this window's states, and the window before as the cut left it (from the
                # state it started from: the last of the window before it)
                assert window in (k, k - 1) or (window, t) == (k - 2, 2), (k, name)
                assert bool(detached[i]) == (window == k - 2 or (t < 2 and window == k - 1))
                if detached[i] and window == k - 2:  # the state window k - 1 started from
                    assert _close(grad, records[k - 1]["start_grad"]), (k, step, name)
                elif detached[i]:
                    assert grad is None, (k, step, name)  # dropped in its own backward
                if detached[i]:
                    assert "[detached]" in scene.node_tooltip(i, step)
                    history = doc.inspect(int(scene.node_ids[i])).history
                    assert "cut off before this graph" in history
            if step == scene.n_steps - 1 and k > 0:
                start = scene.names.index(f"h{k - 1}_2")  # where this window was cut
                assert not detached[start]
                assert [o.kind for o in scene.overlays_at(start)] == ["cut"]
                _, _, grad = _label_parts(frame.labels[start])
                assert _close(grad, rec["start_grad"]), (k, frame.labels[start])
                w = scene.names.index("w")
                assert _close(_label_parts(frame.labels[w])[2], rec["w_grad"])
        assert detached.any() == (k > 0)


_CARRIED_LONG = """
import json
import numpy as np
from autodiff import Variable

w = Variable(np.array(1.0), name="w")
for i in range(PASSES):
    before = None if w.grad is None else float(w.grad.data)
    y = w * w * float(i + 1)
    y.name = "y"
    y.backward()  # cleargrad forgotten: each pass adds to the gradient the last one left
    print(json.dumps({"before": before, "after": float(w.grad.data)}))
"""


@pytest.mark.parametrize(
    "passes, max_passes, in_process", [(9, 4, False), (70, 6, False), (70, 6, True)]
)
def test_a_sampled_long_run_shows_each_passs_carried_gradient_and_numbers_it_as_the_list(
    tmp_path, monkeypatch, passes, max_passes, in_process
):
    """Past the first passes, a long run records the passes into traces of their own (a
    few short ones off the stride share one): the gradient a pass starts with is still the
    one the program printed, and the note numbers the passes as the graph list does (not
    from 1 in every trace)."""
    path = tmp_path / "script.py"
    path.write_text(_CARRIED_LONG.replace("PASSES", str(passes)))
    doc = Document()
    # the first passes in one trace, then a sample of the rest: the passes on the stride in
    # a trace each, the others a few to a trace (the last of them kept)
    if in_process:  # sharing decided by the pass count alone, whatever the machine's load
        monkeypatch.setattr(pass_recording, "SHARED_SECONDS", 60.0)
        run = ScriptRun(path)
        run.max_passes = max_passes
        assert doc.apply_script_result(run.run()), doc.last_error
    else:
        doc.script_max_passes = max_passes
        assert doc.run_script(path), doc.last_error
    records = [json.loads(line) for line in doc.script_result.stdout.splitlines()]
    graphs = doc.script_result.graphs
    assert len(records) == passes and max_passes // 2 + 1 <= len(graphs) < passes
    assert any(g.own_trace for g in graphs)  # some passes were recorded on their own
    if in_process:  # the last pass lies off the stride: it shares a trace with the one before
        assert graphs[-1].number == passes - 1 and graphs[-1].backward_pass > 0
    for k, graph in enumerate(graphs):
        rec = records[graph.number]
        assert graph.title.startswith(f"#{graph.number + 1} ")
        assert doc.show_script_graph(k)
        named = [s.label for s in doc.playback.spans if s.phase == "backward"]
        assert named == ["backward" if graph.number == 0 else f"backward {graph.number + 1}"]
        for step, frame, scene in _walk(doc, k):
            w = scene.names.index("w")
            _, _, grad = _label_parts(frame.labels[w])
            info = doc.inspect(int(scene.node_ids[w]))
            if step == -1:
                if rec["before"] is None:
                    assert grad is None
                    continue
                assert _close(grad, rec["before"]), (graph.number, frame.labels[w])
                assert scene.state(w, step) is NodeState.GRAD_CARRIED
                assert f"before backward #{graph.number + 1}, which adds" in info.note
                if not graph.own_trace or graph.backward_pass > 0:
                    # the pass it came from is in the same trace (the run's first, or one a
                    # few short passes share): it is named
                    assert f"carried over from backward #{graph.number}:" in info.note
                else:
                    assert "an earlier backward" in info.note
            if step == scene.n_steps - 1:
                assert _close(grad, rec["after"]), (graph.number, frame.labels[w])
