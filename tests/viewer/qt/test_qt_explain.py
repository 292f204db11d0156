"""The Explain section of the inspector and the step's edge labels (issue 24, "On screen")."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore

from viewer.model.explain import StepExplanation
from viewer.model.panels.explain_view import explain_lines, step_edge_labels
from viewer.qt.panels.explain import NO_ELEMENT, ExplainSection


def _backward_index(doc, op: str) -> int:
    steps = doc.trace.steps
    return next(i for i, s in enumerate(steps) if s.phase == "backward" and s.op == op)


def test_section_shows_text_literally_and_its_links_select_and_hover(qtbot, explain_term):
    section = ExplainSection()
    qtbot.addWidget(section)
    term = explain_term(formula="gx = gy · <b>x</b>", links=(("gy", 7),))
    lines = explain_lines(StepExplanation(4, 5, "Exp", (term,), ""), lambda n: "<b>x</b>")
    section.set_lines(lines)
    assert "gx = gy · <b>x</b>" in section.text().splitlines()
    # the markup escapes the name: Qt shows the angle brackets, it draws nothing bold
    assert "&lt;b&gt;x&lt;/b&gt;" in section.body.text()
    assert "<b>x</b>" not in section.body.text()
    with qtbot.waitSignal(section.node_requested) as clicked:
        section.body.linkActivated.emit("node:7")
    assert clicked.args == [7]
    with qtbot.waitSignal(section.node_hovered) as hovered:
        section.body.linkHovered.emit("node:5")
    assert hovered.args == [5]
    with qtbot.waitSignal(section.node_hovered) as left:
        section.body.linkHovered.emit("")
    assert left.args == [-1]


@pytest.fixture
def seed_window(window, qtbot):
    assert window.load_example("square_exp_square")
    qtbot.waitUntil(lambda: window.document.scene is not None)
    return window


def test_edge_labels_carry_the_steps_recorded_gradients_and_persist(seed_window, qtbot):
    window, doc = seed_window, seed_window.document
    action = window.actions["edge_gradients"]
    assert action.isCheckable() and not action.isChecked()
    index = _backward_index(doc, "Exp")
    doc.playback.seek(index)
    assert window.graph_view.edge_labels == []
    action.setChecked(True)
    assert window.settings.edge_gradients_shown()
    texts = window.graph_view.edge_labels
    step = doc.trace.steps[index]
    recorded = [float(np.asarray(g.array)) for g in (*step.output_grads, *step.input_grads)]
    shown = sorted(float(t.removeprefix("∇")) for t in texts)
    assert len(texts) == 2 and shown == pytest.approx(sorted(recorded), rel=1e-3)
    # the step moves: the labels follow it; a forward step has none
    doc.playback.seek(0)
    assert window.graph_view.edge_labels == []
    action.setChecked(False)
    assert not window.settings.edge_gradients_shown()
    doc.playback.seek(index)
    assert window.graph_view.edge_labels == []


def test_edge_labels_at_a_fan_out_name_each_edge_once(window, qtbot):
    doc = window.document
    assert window.load_example("add_add")
    qtbot.waitUntil(lambda: doc.scene is not None)
    first = _backward_index(doc, "Add")
    labels = step_edge_labels(doc.scene, first)
    step = doc.trace.steps[first]
    assert len(labels) == len(step.inputs) + len(step.outputs)
    assert len({e for e, _ in labels}) == len(labels)


def test_hovering_a_name_rings_its_node_and_clicking_selects_it(seed_window, qtbot):
    window, doc = seed_window, seed_window.document
    section = window.inspector.explain
    doc.playback.seek(_backward_index(doc, "Exp"))
    step = doc.trace.steps[doc.playback.index]
    node = step.inputs[0]
    section.body.linkHovered.emit(f"node:{node}")
    assert window.graph_view.hovered == doc.scene.index_of(node)
    section.body.linkHovered.emit("")
    assert window.graph_view.hovered == -1
    section.body.linkActivated.emit(f"node:{node}")
    assert doc.selection == node


def test_the_fan_out_sum_is_shown_once_in_the_explain_section(window, qtbot):
    doc = window.document
    assert window.load_example("add_add")
    qtbot.waitUntil(lambda: doc.scene is not None)
    x = next(n for n in doc.trace.graph.nodes if doc.trace.graph.nodes[n].get("name") == "x")
    doc.select(x)
    inspector, section = window.inspector, window.inspector.explain
    # the last step sums x's third contribution: the model's accumulation line says so, once
    doc.playback.to_end()
    said = [t.accumulation for t in doc.explain_step(doc.playback.index).terms if t.input == x]
    assert said and said[-1].endswith("= 3")
    lines = section.text().splitlines()
    assert lines.count(said[-1]) == 1
    assert not any(line.startswith("gradients summed at this fan-out") for line in lines)
    assert "g = " not in inspector.notes.text()  # the inspector's notes no longer repeat it


def test_a_fan_out_sum_of_a_node_the_step_does_not_touch_is_in_the_section(window, qtbot):
    doc = window.document
    assert window.load_example("diamond")
    qtbot.waitUntil(lambda: doc.scene is not None)
    a = next(n for n in doc.trace.graph.nodes if doc.trace.graph.nodes[n].get("name") == "a")
    doc.select(a)
    doc.playback.to_end()  # square(x)'s backward: a's sum is done, no term of it is a's
    assert all(t.input != a for t in doc.explain_step(doc.playback.index).terms)
    summed = doc.scene.accumulation_text(a, doc.playback.index)
    assert summed == "g = 8 + 8 = 16"
    lines = window.inspector.explain.text().splitlines()
    assert lines.count(f"gradients summed at this fan-out: {summed}") == 1
    assert summed not in window.inspector.notes.text()


def test_element_chooser_sets_the_documents_focus(qtbot):
    section = ExplainSection()
    qtbot.addWidget(section)
    section.set_focus((4, 3), (3, 1), chosen=False)  # the largest, as the model chose it
    assert not section.chooser.isHidden() and not section.largest.isEnabled()
    assert [spin.value() for spin in section.spins[:2]] == [3, 1]
    assert section.chooser_label.text() == "element (largest)"
    with qtbot.waitSignal(section.focus_requested) as asked:
        section.spins[1].setValue(2)
    assert asked.args == [(3, 2)]
    with qtbot.waitSignal(section.focus_requested) as reset:
        section.set_focus((4, 3), (3, 2))
        section.largest.click()
    assert reset.args == [None]
    section.set_focus((), None)
    assert section.chooser.isHidden()


def test_the_chooser_shows_no_element_the_explanation_is_not_about(qtbot):
    """A Linear's backward: each term's numbers are at its own largest element (gx1 [0, 2]
    of a (1, 10) weight), none of them an element of the (100, 10) gradient the chooser
    picks in: the boxes once showed 0, 0 under 'element (largest)'."""
    section = ExplainSection()
    qtbot.addWidget(section)
    section.set_focus((100, 10), None, chosen=False)
    assert [spin.text() for spin in section.spins[:2]] == [NO_ELEMENT, NO_ELEMENT]
    assert section.chooser_label.text() == "element (each term's largest)"
    with qtbot.waitSignal(section.focus_requested) as asked:
        section.spins[1].setValue(4)  # one axis chosen: the other starts at 0
    assert asked.args == [(0, 4)]
    section.set_focus((100, 10), (0, 4))
    assert [spin.text() for spin in section.spins[:2]] == ["0", "4"]
    assert section.chooser_label.text() == "element"


def test_section_is_in_view_at_1024_by_700(qtbot):
    from viewer.app import build_window

    window = build_window([])
    qtbot.addWidget(window)
    window.resize(1024, 700)
    window.show()
    qtbot.waitExposed(window)
    doc = window.document
    assert window.load_example("square_exp_square")
    qtbot.waitUntil(lambda: doc.scene is not None)
    doc.playback.seek(_backward_index(doc, "Exp"))
    section, inspector = window.inspector.explain, window.inspector
    qtbot.waitUntil(section.isVisible)
    # the terms need no scrolling, in the section or in the inspector
    qtbot.waitUntil(lambda: section.scroll.verticalScrollBar().maximum() == 0, timeout=3000)
    top_left = section.mapTo(inspector, QtCore.QPoint(0, 0))
    assert top_left.y() >= 0 and top_left.y() + section.height() <= inspector.height()
    term = doc.explain_step(doc.playback.index).terms[0]
    assert term.formula in section.text().splitlines()


def test_the_section_shows_the_models_terms_and_follows_playback(seed_window, qtbot):
    window, doc = seed_window, seed_window.document
    section = window.inspector.explain
    index = _backward_index(doc, "Exp")
    doc.playback.seek(index)
    explanation = doc.explain_step(index)
    assert explanation.terms
    lines = section.text().splitlines()
    for term in explanation.terms:
        assert term.formula in lines
        # the numbers exactly as the model wrote them, then the gradient sent
        assert f"= {term.numbers} = {float(term.result):.4g}" in lines
    assert doc.playback.step_forward()
    following = doc.explain_step(doc.playback.index)
    assert following.op == "Square" and following.terms
    lines = section.text().splitlines()
    assert lines[0] == f"step {doc.playback.index + 1}: backward of Square"
    assert all(f"= {t.numbers} = {float(t.result):.4g}" in lines for t in following.terms)
    assert not any(t.formula in lines for t in explanation.terms)  # Exp's formula is gone
    doc.playback.seek(0)  # a forward step explains nothing; with nothing selected, no section
    doc.select(None)
    assert section.isHidden()


def test_edge_labels_setting_is_read_at_start(qtbot):
    from viewer.app import build_window
    from viewer.qt.settings import AppSettings

    saved = AppSettings()
    saved.set_edge_gradients_shown(True)
    saved.sync()
    window = build_window([])
    qtbot.addWidget(window)
    assert window.actions["edge_gradients"].isChecked()
    assert window.explain_binding.edge_labels_shown


def test_the_element_chooser_picks_the_element_the_numbers_are_for(window, qtbot):
    import autodiff.functions as F
    from autodiff import Variable, trace

    with trace.record() as t:
        x = Variable(np.arange(12.0).reshape(4, 3) / 10, name="x")
        b = Variable(np.array([1.0, -2.0, 0.5]), name="b")
        y = F.sum(F.square(x + b))
        y.backward()
    t._keep = (x, b, y)
    doc = window.document
    doc.load_graph(t, "broadcast", "trace")
    qtbot.waitUntil(lambda: doc.scene is not None)
    index = _backward_index(doc, "Square")
    doc.playback.seek(index)
    section = window.inspector.explain
    assert not section.chooser.isHidden()
    assert [s.value() for s in section.spins[:2]] == list(doc.explain_step(index).terms[0].element)
    section.spins[0].setValue(1)
    section.spins[1].setValue(2)
    assert doc.focus_element == (1, 2)
    term = doc.explain_step(index).terms[0]
    assert term.element == (1, 2)
    assert f"= {term.numbers} = {float(np.asarray(term.result)[1, 2]):.4g}" in section.text()
    section.largest.click()
    assert doc.focus_element is None


def test_the_chain_is_the_selected_nodes_and_follows_a_new_leaf_value(seed_window, qtbot):
    window, doc = seed_window, seed_window.document
    section = window.inspector.explain

    def x_node() -> int:
        g = doc.trace.graph
        return next(n for n in g.nodes if g.nodes[n].get("name") == "x")

    doc.select(x_node())
    doc.playback.to_end()
    before = doc.chain(x_node()).text
    assert before and before.splitlines()[0] in section.text().splitlines()
    assert doc.set_leaf_value("x", 1.0)
    qtbot.waitUntil(lambda: doc.chain(x_node()).text != before)
    doc.select(x_node())
    after = doc.chain(x_node()).text
    qtbot.waitUntil(lambda: after.splitlines()[0] in section.text().splitlines())
    assert before.splitlines()[0] not in section.text().splitlines()


def test_the_chain_total_shows_only_once_the_program_holds_it(seed_window, qtbot):
    """At Exp's backward step x has no gradient yet: the section does not show the total
    the pass will give it (a number the program does not hold at that step)."""
    window, doc = seed_window, seed_window.document
    section = window.inspector.explain
    g = doc.trace.graph
    x = next(n for n in g.nodes if g.nodes[n].get("name") == "x")
    doc.select(x)
    doc.playback.seek(_backward_index(doc, "Exp"))
    assert doc.trace.grad_at(x, doc.playback.index) is None
    total = doc.chain(x).text.splitlines()[0]
    text = section.text()
    assert total not in text.splitlines()
    last = max(i for i, s in enumerate(doc.playback.steps) if x in s.inputs)
    assert f"whole gradient (at step {last + 1})" in text
    doc.playback.seek(last)
    qtbot.waitUntil(lambda: total in section.text().splitlines())
    held = float(doc.trace.grad_at(x, last).array)
    assert doc.chain(x).total == pytest.approx(held)
