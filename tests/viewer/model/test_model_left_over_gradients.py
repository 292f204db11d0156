"""A gradient left over from an ended backward pass is an alarm only when a later backward adds
to it (GRAD_CARRIED: a forgotten cleargrad / zero_grad); one the program empties first, or
that nothing touches again, is a plain previous gradient (GRAD_PREVIOUS). Every bundled
training example is a correct program and opens without the alarm; the colour, the legend,
the tooltip and the inspector say the same thing."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from bug_demos import demonstrates

from autodiff.trace import NodeState
from viewer.model import Document
from viewer.model.document.examples import find_example, list_examples
from viewer.model.node_states import state_code
from viewer.model.panels.legend import STATE_LINES, VARIABLE_STATES

MEANING = {e.state: e.meaning for e in VARIABLE_STATES}
# every script but the leak demonstrations, which keep graphs alive on purpose, and the one
# that forgets cleargrads() on purpose
SCRIPTS = sorted(
    e.stem
    for e in list_examples()
    if e.kind == "script"
    and e.category != "leaks"
    and not demonstrates(e.stem, {"carried-gradient"})
)
TRAINING = sorted(e.stem for e in list_examples() if e.category == "training")


def _drawn_states(doc: Document) -> dict[str, list[tuple[int, int]]]:
    """Every state the shown graph draws at some step: state -> [(step, node index)]."""
    scene = doc.scene
    drawn: dict[str, list[tuple[int, int]]] = {}
    for step in range(-1, scene.n_steps):
        frame = scene.frame(step)
        for i, code in enumerate(frame.state_codes.tolist()):
            drawn.setdefault(frame.state_names[code], []).append((step, i))
    return drawn


def test_the_training_examples_are_bundled_scripts():
    assert set(TRAINING) <= set(SCRIPTS)
    assert {"linear_regression", "spiral", "sine_regression", "residual_mlp"} <= set(TRAINING)
    assert {"cnn_step", "rnn_bptt", "micrograd_mlp"} <= set(TRAINING)


@pytest.mark.parametrize("stem", SCRIPTS)
def test_a_bundled_example_never_draws_the_carried_over_alarm(stem):
    missing = find_example(stem).missing
    if missing:  # a torch example, where torch is not installed
        pytest.skip(f"{stem} needs {', '.join(missing)}")
    doc = Document()
    result = doc.load_example(stem).run()
    assert result.ok, result.error
    assert doc.apply_script_result(result)  # the graph it opens with: the last one
    n = len(result.graphs)
    shown = [n - 1, *sorted({0, 1, n // 2} & set(range(n - 1)))]  # and earlier passes
    previous = 0
    for k in shown:
        if k != n - 1:
            assert doc.show_script_graph(k)
        drawn = _drawn_states(doc)
        assert "grad_carried" not in drawn, (stem, k, drawn["grad_carried"][:5])
        # each previous gradient says the program empties it (or nothing reaches it again),
        # never that a backward adds to it
        for step, i in drawn.get("grad_previous", [])[:50]:
            doc.playback.seek(step)
            info = doc.inspect(int(doc.scene.node_ids[i]))
            assert info.state is NodeState.GRAD_PREVIOUS
            assert info.note.startswith("previous gradient") and "adds to it" not in info.note
            previous += 1
    if stem in TRAINING and n > 1:
        assert previous, f"{stem}: no later pass showed the gradient the last one left"


def test_the_global_list_example_adds_to_the_input_gradient_it_never_empties():
    # leaks/global_list empties w's gradient before each backward but never x's: the second
    # backward adds to x's, so x (and only x) is carried over, w a previous gradient
    doc = Document()
    result = doc.load_example("global_list").run()
    assert result.ok, result.error
    assert doc.apply_script_result(result) and len(result.graphs) == 2
    scene = doc.scene
    x, w = scene.names.index("x"), scene.names.index("w")
    drawn = _drawn_states(doc)
    # carried until the step of this backward that adds to it, a gradient of this pass after
    added = min(s for s in range(scene.n_steps) if scene.state(x, s) is NodeState.GRAD)
    assert scene.frame(added).phase == "backward"
    assert {i for _, i in drawn["grad_carried"]} == {x}
    assert {s for s, i in drawn["grad_carried"]} == set(range(-1, added))
    assert {i for _, i in drawn.get("grad_previous", [])} == {w}
    doc.playback.seek(-1)
    assert "before backward #2, which adds to it" in doc.inspect(int(scene.node_ids[x])).note
    assert "empties it" in doc.inspect(int(scene.node_ids[w])).note


_FORGOTTEN = """
import json
import numpy as np
from autodiff import Variable
import autodiff.functions as F

w = Variable(np.array(0.5), name="w")      # never emptied: every backward adds to it
b = Variable(np.array(0.25), name="b")     # emptied before every backward
c = Variable(np.array(2.0), name="c")      # used by the first pass only
for i in range(3):
    before = {p.name: None if p.grad is None else float(p.grad.data) for p in (w, b, c)}
    y = F.sin(w) * b
    if i == 0:
        y = y * c
    y.name = "y"
    b.cleargrad()
    y.backward()
    print(json.dumps(before))
"""


def _forgotten(tmp_path) -> tuple[Document, list[dict]]:
    path = tmp_path / "forgotten.py"
    path.write_text(textwrap.dedent(_FORGOTTEN))
    doc = Document()
    assert doc.run_script(path), doc.last_error
    records = [json.loads(line) for line in doc.script_result.stdout.splitlines()]
    assert len(records) == len(doc.script_result.graphs) == 3
    return doc, records


def test_a_forgotten_cleargrad_is_carried_on_exactly_the_parameters_the_next_backward_adds_to(
    tmp_path,
):
    doc, records = _forgotten(tmp_path)
    carried_fill = doc.scene.palette.variable_fill[state_code("grad_carried")]
    assert STATE_LINES["grad_carried"] == ("dashed", 2.8)
    assert "adds to it" in MEANING["grad_carried"] and "cleargrad" in MEANING["grad_carried"]
    for k in (1, 2):
        assert doc.show_script_graph(k)
        scene = doc.scene
        w, b = scene.names.index("w"), scene.names.index("b")
        assert "c" not in scene.names  # not in this pass's graph
        forward = [s for s in range(-1, scene.n_steps) if scene.frame(s).phase != "backward"]
        assert len(forward) > 2
        for step in forward:
            frame = scene.frame(step)
            doc.playback.seek(step)
            # w: the next backward (this graph's) adds to what the last one left
            assert scene.state(w, step) is NodeState.GRAD_CARRIED
            assert tuple(frame.fill[w]) == tuple(carried_fill)
            info = doc.inspect(int(scene.node_ids[w]))
            assert info.state is NodeState.GRAD_CARRIED
            assert float(info.grad.array) == records[k]["w"]
            assert info.note == (
                f"carried over from backward #{k}: nothing empties it (cleargrad / zero_grad) "
                f"before backward #{k + 1}, which adds to it"
            )
            tooltip = scene.node_tooltip(w, step)
            assert "grad carried" in tooltip and info.note in tooltip
            # b: emptied before the backward, so no alarm until then
            b_info = doc.inspect(int(scene.node_ids[b]))
            if b_info.grad is not None:
                assert b_info.state is NodeState.GRAD_PREVIOUS
                assert "empties it" in b_info.note and "carried" not in b_info.note
        # once this graph's backward ran, w holds the sum: a gradient of this pass
        assert scene.state(w, scene.n_steps - 1) is NodeState.GRAD


def test_a_gradient_nothing_touches_again_is_previous_in_the_whole_recording(tmp_path):
    doc, _ = _forgotten(tmp_path)
    trace = doc.script_result.trace
    c = next(n for n in trace.variables if trace.node(n)["name"] == "c")
    w = next(n for n in trace.variables if trace.node(n)["name"] == "w")
    end_of_first = trace.steps_of_pass(0)[-1]
    later = range(end_of_first + 1, len(trace.steps))
    assert trace.state_at(c, end_of_first) is NodeState.GRAD
    assert {trace.state_at(c, s) for s in later} == {NodeState.GRAD_PREVIOUS}
    assert trace.grad_fate(c, len(trace.steps) - 1) == (None, False)  # nothing touches it
    # w is carried between passes and a gradient of its own pass during it
    second = trace.steps_of_pass(1)
    assert trace.state_at(w, second[0] - 1) is NodeState.GRAD_CARRIED
    assert trace.grad_fate(w, second[0] - 1) == (1, False)


def test_the_last_passs_gradients_are_not_carried_after_the_recording_ends():
    from autodiff import Variable, trace
    from autodiff import functions as F

    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        for _ in range(2):
            x.cleargrad()
            y = F.exp(x) * x
            y.backward()
        z = F.sin(x)  # more forward steps after the last backward: nothing adds to it
    xid = next(n for n in t.variables if t.node(n)["name"] == "x")
    end = t.steps_of_pass(1)[-1]
    assert end < len(t.steps) - 1
    assert t.state_at(xid, end) is NodeState.GRAD
    for step in range(end + 1, len(t.steps)):
        assert t.state_at(xid, step) is NodeState.GRAD_PREVIOUS
        assert t.grad_fate(xid, step) == (None, False)
    assert NodeState.GRAD_CARRIED not in {s for _, s in t.timeline(xid)}
    del z
