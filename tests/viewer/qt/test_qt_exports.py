"""File > Export from the window: the view as PNG/SVG, the graph as DOT/GraphML, the trace as
JSON that Open loads back as the same graph; bad requests say why and change nothing."""

import json

import networkx as nx
import numpy as np

from viewer.qt.dialogs import EXPORT_FILTER


def _graph_signature(doc):
    t = doc.trace
    nodes = sorted(
        (n, a["kind"], a.get("name") or "", a.get("op") or "") for n, a in t.graph.nodes(data=True)
    )
    edges = sorted((u, v, d.get("slot", 0)) for u, v, d in t.graph.edges(data=True))
    steps = [(s.phase, s.op, tuple(s.inputs), tuple(s.outputs)) for s in t.steps]
    return nodes, edges, steps


def test_the_export_dialog_offers_every_format():
    for suffix in ("*.png", "*.svg", "*.dot", "*.graphml", "*.json"):
        assert suffix in EXPORT_FILTER


def test_json_export_opens_again_as_the_same_graph(qtbot, window, tmp_path):
    assert window.editor_binding.run("x = 0.5\ny = tanh(x) * x ** 2")
    before = _graph_signature(window.document)
    positions = window.document.scene.geometry.positions.copy()
    grads = [window.document.trace.grad_at(0, i) for i in range(6)]
    path = tmp_path / "trace.json"
    assert window.export_path(path)
    assert "trace.json" in window.statusBar().currentMessage()
    assert json.loads(path.read_text())  # plain JSON
    assert window.open_path(path)
    doc = window.document
    assert doc.kind == "trace" and doc.path == path
    assert _graph_signature(doc) == before
    assert np.allclose(doc.scene.geometry.positions, positions)
    assert doc.trace.node(0)["name"] == "x"
    again = [doc.trace.grad_at(0, i) for i in range(6)]
    assert [g is None for g in again] == [g is None for g in grads]
    assert float(again[-1].array) == float(grads[-1].array)  # dy/dx at x = 0.5, to the bit


def test_dot_and_graphml_exports_are_valid(window, tmp_path):
    assert window.editor_binding.run("x = 0.5\ny = x * x + exp(x)")
    graph = window.document.trace.graph
    dot = tmp_path / "graph.dot"
    assert window.export_path(dot)
    text = dot.read_text()
    assert text.lstrip().startswith("digraph") and text.rstrip().endswith("}")
    assert text.count("->") == graph.number_of_edges()
    graphml = tmp_path / "graph.graphml"
    assert window.export_path(graphml)
    back = nx.read_graphml(graphml)
    assert back.number_of_nodes() == graph.number_of_nodes()
    assert back.number_of_edges() == graph.number_of_edges()
    kinds = sorted(a["kind"] for _, a in back.nodes(data=True))
    assert kinds == sorted(a["kind"] for _, a in graph.nodes(data=True))


def test_pictures_still_export_with_the_flags(window, tmp_path):
    assert window.load_example("nan_log")
    assert window.export_path(tmp_path / "view.png")
    assert window.export_path(tmp_path / "view.svg")
    assert (tmp_path / "view.png").stat().st_size > 1000
    assert "NaN" in (tmp_path / "view.svg").read_text()


def test_a_bad_export_says_why_and_keeps_the_state(qtbot, window, tmp_path):
    scene = window.document.scene
    assert not window.export_path(tmp_path / "graph.bmp")
    assert "unknown suffix" in window.statusBar().currentMessage()
    assert not window.export_path(tmp_path / "missing" / "graph.dot")
    assert window.document.scene is scene


def test_a_trace_without_backward_steps_loads_and_says_what_is_missing(qtbot, window, tmp_path):
    import autodiff.functions as F
    from autodiff import Variable, trace

    with trace.record() as t:
        x = Variable(np.array(0.5), name="x")
        y = F.exp(x)
        y.name = "y"
    path = tmp_path / "forward.json"
    t.to_json(path)
    assert window.open_path(path)
    message = window.statusBar().currentMessage()
    assert "no backward steps" in message and "trace.record()" in message
    assert window.document.kind == "trace" and window.document.playback.n_steps == 1
    # the gradient check cannot run on a saved trace, and says why
    window.gradcheck_binding.check_gradients()
    assert "objects are gone" in window.gradcheck_panel.summary.text()
    window.raise_dock("plotPanel")
    window.plot_panel.set_current_tab("training")
    assert "never called backward()" in window.plot_panel.training_message.text()


def test_a_dot_export_holds_the_values_of_the_step_on_screen(window, tmp_path):
    """DOT used to write every node's last value whatever the step shown."""
    import re

    assert window.editor_binding.run("x = 0.5\ny = x * x + exp(x)")
    doc = window.document
    trace = doc.trace
    x = next(n for n in trace.variables if trace.node(n)["name"] == "x")
    seen = set()
    for step in (-1, 1, doc.playback.n_steps - 1):
        doc.playback.seek(step)
        path = tmp_path / f"at{step}.dot"
        assert window.export_path(path)
        assert (f"at step {step + 1}" if step >= 0 else "before any step") in doc_status(window)
        line = next(t for t in path.read_text().splitlines() if t.startswith(f"{x} ["))
        grad = trace.grad_at(x, step)
        assert ("grad" in line) == (grad is not None), (step, line)
        if grad is not None:
            shown = float(re.search(r"grad ([-\d.e+]+)", line).group(1))
            assert abs(shown - float(grad.array)) < 1e-3
        seen.add(line)
    assert len(seen) == 2  # before backward x has no gradient; at the end it has


def doc_status(window) -> str:
    return window.statusBar().currentMessage()
