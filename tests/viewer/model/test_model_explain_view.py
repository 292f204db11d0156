"""The Explain section's words and the step's edge labels, without Qt (issue 24, item 4)."""

from __future__ import annotations

import numpy as np

from viewer.model.explain import Chain, ChainPath, StepExplanation
from viewer.model.expression.program import evaluate
from viewer.model.layout.compute import compute_layout
from viewer.model.panels.explain_view import (
    chain_lines,
    edge_midpoints,
    explain_lines,
    link_segments,
    step_edge_labels,
)
from viewer.model.scene.scene import Scene


def test_names_are_linked_where_they_stand_alone(explain_names):
    text = "gx = gy · 2x · exp(x) + gx0 + gy @ x1ᵀ"
    segments = link_segments(text, (("x", 3), ("gy", 7), ("x1", 4)))
    linked = [(t, n) for t, n in segments if n is not None]
    assert linked == [("gy", 7), ("x", 3), ("x", 3), ("gy", 7), ("x1", 4)]
    assert "".join(t for t, _ in segments) == text


def test_lines_carry_the_models_numbers_verbatim_and_the_array_details(explain_term, explain_names):
    term = explain_term(
        numbers="0.1234567 × 2",
        element=(1, 2),
        shapes="gy (4, 3) · x (4, 3)",
        broadcast="summed over axis 0: b (3,) was broadcast to (4, 3)",
        accumulation="x.grad = 2.568 (from Square, step 5) + 0.5 (from Mul, step 7) = 3.068",
        result=np.ones((4, 3)),
    )
    text = [
        line.text
        for line in explain_lines(StepExplanation(6, 5, "Add", (term,), ""), explain_names)
    ]
    assert "= 0.1234567 × 2 = 1" in text  # the model's numbers as written, then the result
    assert f"numbers at element [1, 2] · {term.shapes}" in text
    assert term.broadcast in text and term.accumulation in text


def test_chain_lines_are_the_models_text_with_each_factor_linked():
    paths = (
        ChainPath((9, 8, 4, 6, 3), (1.0, 2.0, 3.0), ("∂y/∂y", "∂y/∂a", "∂a/∂x"), 6.0),
        ChainPath((9, 5, 3), (1.0, 1.0), ("∂y/∂y", "∂y/∂x"), 1.0),
    )
    text = (
        "∂y/∂x = ∂y/∂y · ∂y/∂a · ∂a/∂x = 1 × 2 × 3 = 6\n"
        "∂y/∂x = ∂y/∂y · ∂y/∂x = 1 × 1 = 1\n"
        "sum over 3 paths: 6 + 1 + 1 more paths (1) = 8"
    )
    lines = chain_lines(Chain(3, paths, 8.0, 1, text))
    assert [line.text for line in lines] == text.splitlines()
    # the seed links to the output, each later factor to its Function; the head is not linked
    assert [s for s in lines[0].segments if s[1] is not None] == [
        ("∂y/∂y", 9),
        ("∂y/∂a", 8),
        ("∂a/∂x", 6),
    ]
    assert [s for s in lines[1].segments if s[1] is not None] == [("∂y/∂y", 9), ("∂y/∂x", 5)]
    assert all(n is None for _, n in lines[2].segments)


def test_edge_labels_are_the_steps_recorded_gradients_on_its_own_edges():
    ev = evaluate("x = 0.5\ny = square(exp(square(x)))")
    trace = ev.trace
    scene = Scene(trace, compute_layout(trace))
    for index, step in enumerate(trace.steps):
        labels = step_edge_labels(scene, index)
        if step.phase != "backward":
            assert labels == []
            continue
        fn = scene.index_of(step.function)
        expected = {}
        for e, (u, v) in enumerate(scene.edges.tolist()):
            slot = int(scene.edge_slots[e])
            if v == fn:
                expected[e] = float(np.asarray(step.input_grads[slot].array))
            elif u == fn:
                expected[e] = float(np.asarray(step.output_grads[slot].array))
        assert {e for e, _ in labels} == set(expected)
        for e, text in labels:
            assert text.startswith("∇")
            assert float(text[1:]) == np.float64(f"{expected[e]:.4g}")
        points = edge_midpoints(scene, [e for e, _ in labels])
        for (e, _), point in zip(labels, points, strict=True):
            line = scene.edge_polyline(e)
            assert line[:, 1].min() <= point[1] <= line[:, 1].max()


def test_a_step_with_many_inputs_labels_a_bounded_number_of_edges():
    import autodiff.functions as F
    from autodiff import Variable, trace
    from viewer.model.panels.explain_view import MAX_EDGE_LABELS

    with trace.record() as t:
        parts = [Variable(np.ones((1, 2)) * k) for k in range(MAX_EDGE_LABELS + 10)]
        y = F.sum(F.concat(parts, axis=0))
        y.backward()
    scene = Scene(t, compute_layout(t))
    assert max(len(step.inputs) for step in t.steps) > MAX_EDGE_LABELS
    counts = [len(step_edge_labels(scene, i)) for i in range(len(t.steps))]
    assert max(counts) == MAX_EDGE_LABELS
