"""The inspector's data for a node at a step."""

import numpy as np

from autodiff.trace import NodeState
from viewer.model.expression.program import evaluate
from viewer.model.panels.inspector import FULL_ARRAY_LIMIT, inspect


def ids_by_name(trace):
    return {trace.node(n)["name"]: n for n in trace.variables if trace.node(n)["name"]}


def test_variable_fields_across_steps():
    ev = evaluate("x = 0.5\ny = square(exp(square(x)))")
    t = ev.trace
    x = ids_by_name(t)["x"]
    last = len(t.steps) - 1
    info = inspect(t, x, -1)
    assert (info.kind, info.name, info.op, info.shape, info.dtype) == (
        "variable",
        "x",
        None,
        (),
        "float64",
    )
    assert info.generation == 0
    assert info.state is NodeState.VALUE
    assert info.value.text == "0.5" and info.value.full
    assert info.grad is None
    assert info.creator is None
    assert [c.label.split(" ")[0] for c in info.consumers] == ["Square"]
    end = inspect(t, x, last)
    assert end.state is NodeState.GRAD
    assert float(end.grad.text) == float(np.float64(3.297443))
    rows = dict(end.as_rows())
    assert rows["name"] == "x" and rows["state"] == "grad"
    assert end.title.startswith("x (variable")


def test_the_backward_steps_of_a_known_program_read_as_written_by_hand():
    # y = square(exp(square(x))) = exp(2 x^2) at x = 0.5: a = 0.25, b = e^0.25 = 1.284025,
    # dy/db = 2b = 2.568051, dy/da = 2b * b = 3.297443, dy/dx = 3.297443 * 2x = 3.297443.
    # A node shows its gradient through the step that uses it, then "grad cleared"
    # (retain_grad=False); x, a leaf, keeps its own.
    ev = evaluate("x = 0.5\na = square(x)\nb = exp(a)\ny = square(b)")
    t = ev.trace
    ids = ids_by_name(t)
    V, G, C = "value", "grad", "grad cleared"
    expected = {  # step: (state, gradient shown) of x, a, b, y
        3: [(V, None), (V, None), (G, "2.568051"), (G, "1")],
        4: [(V, None), (G, "3.297443"), (G, "2.568051"), (C, None)],
        5: [(G, "3.297443"), (G, "3.297443"), (C, None), (C, None)],
    }
    for step, rows in expected.items():
        seen = []
        for name in "xaby":
            info = dict(inspect(t, ids[name], step).as_rows())
            seen.append((info["state"], info.get("grad")))
        assert seen == rows, step


def test_function_fields():
    ev = evaluate("x = 0.5\ny = add(x, x)")
    t = ev.trace
    f = t.functions[0]
    info = inspect(t, f, 0)
    assert info.kind == "function" and info.op == "Add"
    assert [r.slot for r in info.inputs] == [0, 1]
    assert len(info.outputs) == 1
    assert info.value is None and info.grad is None
    assert info.state is NodeState.VALUE
    assert inspect(t, f, -1).state is NodeState.NOT_COMPUTED


def test_intermediate_has_creator_and_consumers():
    ev = evaluate("x = 0.5\na = square(x)\ny = a + a")
    t = ev.trace
    a = ids_by_name(t)["a"]
    info = inspect(t, a, len(t.steps) - 1)
    assert info.creator is not None and info.creator.label.startswith("Square")
    assert [c.slot for c in info.consumers] == [0, 1]


def test_small_arrays_in_full_large_ones_summarised_with_histogram():
    ev = evaluate("x = arange(6)\nW = randn(40, 50)\ny = sum(x) + sum(W)")
    t = ev.trace
    names = ids_by_name(t)
    small = inspect(t, names["x"], -1).value
    assert small.full and "5" in small.text and small.histogram is None
    big = inspect(t, names["W"], len(t.steps) - 1)
    assert big.value.shape == (40, 50) and not big.value.full
    assert FULL_ARRAY_LIMIT < 40 * 50
    assert "mean" in big.value.text
    assert big.value.histogram.sum() == 2000
    assert len(big.value.bin_edges) == len(big.value.histogram) + 1
    assert big.grad is not None and big.grad.mean == 1.0


def test_unnamed_nodes_repeated_consumers_and_plain_numbers():
    from viewer.model import Document

    doc = Document()
    assert doc.run_expression("x = 1.0\ny = (x + x) * 2")
    doc.playback.to_end()
    info = doc.inspect(0)
    assert [c.label for c in info.consumers] == ["Add #1 (arg 0)", "Add #1 (arg 1)"]
    assert info.value.text == "1" and info.grad.text == "4"  # not numpy's "1."
    out = next(n for n in doc.trace.variables if doc.trace.creator_of(n) == 1)
    assert doc.inspect(out).title == f"variable #{out} from Add"
    scene = doc.scene
    assert scene.node_tooltip(scene.index_of(out), 0).startswith("output of Add (variable")
