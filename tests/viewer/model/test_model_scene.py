"""The scene: arrays for the graph view, per-step states and colours, labels, hit tests."""

import numpy as np
import pytest

from viewer.model.expression.program import evaluate
from viewer.model.layout.compute import compute_layout
from viewer.model.node_states import STATE_NAMES, state_code
from viewer.model.scene.colours import DARK, LIGHT
from viewer.model.scene.overlays import Overlay
from viewer.model.scene.scene import Scene


def make_scene(text, palette="light"):
    ev = evaluate(text)
    trace = ev.trace
    return ev, Scene(trace, compute_layout(trace), palette)


def test_geometry_shapes():
    _, scene = make_scene("x = 0.5\ny = square(exp(square(x)))")
    g = scene.geometry
    n = scene.n_nodes
    assert n == 7  # 4 variables, 3 functions
    assert g.positions.shape == (n, 2)
    assert g.is_function.sum() == 3
    assert g.n_edges == scene.n_edges == 6
    assert g.edge_offsets.shape == (7,)
    assert g.arrow_points.shape == (3 * 6, 2)
    x0, y0, x1, y1 = g.bounds()
    assert x0 < x1 and y0 < y1


def test_one_edge_per_argument_slot_and_parallel_edges_are_apart():
    _, scene = make_scene("x = 3.0\ny = x + x")
    x = scene.index_of(next(n for n in scene.node_ids if scene.names[scene.index_of(n)] == "x"))
    add = int(np.flatnonzero(scene.geometry.is_function)[0])
    both = [e for e, (u, v) in enumerate(scene.edges) if (u, v) == (x, add)]
    assert len(both) == 2
    assert sorted(scene.edge_slots[both]) == [0, 1]
    a, b = (scene.edge_polyline(e) for e in both)
    assert not np.allclose(a, b)
    assert "argument 0 of Add" in scene.edge_tooltip(both[0])
    assert "scalar" in scene.edge_tooltip(both[0])


def test_states_and_colours_change_across_steps():
    _, scene = make_scene("x = 0.5\ny = square(exp(square(x)))")
    frames = [scene.frame(step) for step in range(-1, scene.n_steps)]
    for frame in frames:
        assert frame.state_codes.shape == (scene.n_nodes,)
        assert frame.fill.shape == (scene.n_nodes, 4) and frame.fill.dtype == np.uint8
        assert len(frame.labels) == scene.n_nodes
    before, after_forward, end = frames[0], frames[3], frames[-1]
    y = scene.names.index("y")
    x = scene.names.index("x")
    assert STATE_NAMES[before.state_codes[y]] == "not_computed"
    assert STATE_NAMES[after_forward.state_codes[y]] == "value"
    assert STATE_NAMES[end.state_codes[x]] == "grad"
    assert not np.array_equal(before.fill[y], after_forward.fill[y])
    assert not np.array_equal(after_forward.fill[x], end.fill[x])
    assert "1.649" in after_forward.labels[y]
    assert "∇ 3.297" in end.labels[x]


def test_every_state_has_a_distinct_colour_in_both_palettes():
    for palette in (LIGHT, DARK):
        for table in (palette.variable_fill, palette.function_fill):
            assert table.shape == (len(STATE_NAMES), 4)
            assert len({tuple(row) for row in table}) == len(STATE_NAMES)
    _, light = make_scene("y = exp(x)", "light")
    _, dark = make_scene("y = exp(x)", "dark")
    assert not np.array_equal(light.frame(0).fill, dark.frame(0).fill)


def test_current_function_and_its_edges_are_highlighted():
    _, scene = make_scene("x = 0.5\ny = exp(square(x))")
    assert scene.frame(-1).current_function == -1
    assert len(scene.frame(-1).active_edges) == 0
    frame = scene.frame(0)
    f = frame.current_function
    assert scene.geometry.is_function[f] and scene.names[f] == "Square"
    for e in frame.active_edges:
        assert f in scene.edges[e]
    assert len(frame.active_edges) == 2
    assert f in frame.current_nodes


def test_accumulation_text_at_fan_in():
    _, scene = make_scene("x = 3.0\ny = add(add(x, x), x)")
    texts = [t for step in range(scene.n_steps) for t in scene.frame(step).accumulations.values()]
    assert texts and texts[-1] == "g = 1 + 1 + 1 = 3"


def test_grad_cleared_state_is_shown():
    _, scene = make_scene("x = 0.5\na = square(x)\nb = exp(a)\ny = sin(b)")
    a = scene.names.index("a")
    codes = [scene.frame(s).state_codes[a] for s in range(-1, scene.n_steps)]
    labels = [scene.frame(s).labels[a] for s in range(-1, scene.n_steps)]
    # a receives its gradient from Exp (step 4), Square uses it and backward drops it
    # (step 5): it shows the gradient through the step that uses it, then "grad cleared"
    assert codes[-3:] == [state_code("value"), state_code("grad"), state_code("grad")]
    assert "∇" in labels[-1] and "∇" not in labels[-3]
    b = scene.names.index("b")
    assert scene.frame(scene.n_steps - 1).state_codes[b] == state_code("grad_cleared")
    assert "∇" not in scene.frame(scene.n_steps - 1).labels[b]


def test_constant_state():
    _, scene = make_scene("y = x * 2")
    constant = [
        i
        for i in range(scene.n_nodes)
        if scene.frame(scene.n_steps - 1).state_codes[i] == state_code("constant")
    ]
    assert len(constant) == 1


def test_node_at_hits_inside_boxes_only():
    _, scene = make_scene("x = 0.5\ny = exp(square(x))")
    g = scene.geometry
    for i, (x, y) in enumerate(g.positions):
        assert scene.node_at(x, y) == i
        hx, hy = g.half_sizes[i]
        assert scene.node_at(x + 0.9 * hx, y + 0.9 * hy) == i
    _x0, _y0, x1, y1 = g.bounds()
    assert scene.node_at(x1 + 10, y1 + 10) == -1


def test_edge_hit_and_tooltips():
    _, scene = make_scene("x = 0.5\ny = exp(x)")
    path = scene.edge_polyline(0)
    middle = (path[0] + path[-1]) / 2
    assert scene.edge_at(*middle) == 0
    assert "Exp" in scene.tooltip_at(*middle, 0)
    x = scene.names.index("x")
    assert scene.tooltip_at(*scene.geometry.positions[x], 1).startswith("x (variable, grad)")
    points, connect = scene.edge_lines()
    assert len(points) == len(connect) and not connect[-1]


def test_label_detail_levels():
    # (box height on screen in pixels, the most lines a label has): 3 lines need a box 4.3
    # times the text's size, a name alone 1.7 times; text under 8 px is not drawn
    assert Scene.label_detail(5, 3) == 0
    assert Scene.label_detail(20, 3) == 1
    assert Scene.label_detail(40, 3) == 2
    assert Scene.label_detail(40, 4) == 1  # four lines in 40 px would be 7 px text
    _, scene = make_scene("x = [1, 2, 3]\ny = sum(x * x)")
    x = scene.names.index("x")
    assert scene.label(x, -1, detail=1) == "x"
    assert scene.label(x, -1, detail=0) == ""
    assert "3" in scene.label(x, -1).split("\n")[1]  # the shape line


def test_overlays_and_nonfinite_flag():
    _, scene = make_scene("x = 1.5\nd = x - x\ny = log(d) * x")
    indexes, colours, badges = scene.overlay_arrays("nonfinite")
    assert len(indexes) == 1 and scene.names[indexes[0]] == "Log"
    assert colours.shape == (1, 4) and badges == ["-Inf"]  # log(0): the badge says what
    for text, badge in [("y = log(x - x - 1)", "NaN"), ("y = exp(x * 1000)", "Inf")]:
        _, other = make_scene(text)
        assert other.overlay_arrays("nonfinite")[2] == [badge], text
    assert scene.frame(scene.n_steps - 1).nonfinite.any()
    assert not scene.frame(-1).nonfinite.any()
    node = int(scene.node_ids[0])
    scene.set_overlay(node, Overlay("leak", "!", (255, 0, 0, 255), "held by a list"))
    scene.set_error_colours({node: 1e-9})
    assert {o.kind for o in scene.overlays[node]} == {"leak", "gradcheck"}
    scene.clear_overlays("leak")
    assert {o.kind for o in scene.overlays[node]} == {"gradcheck"}
    scene.flag_nodes([node], "leak", "leak", ["cycle"])
    assert "[leak] cycle" in scene.node_tooltip(0, -1)


def test_frame_cost_is_vectorised_for_a_bigger_graph():
    text = "h = x\n" + "\n".join("h = tanh(h * 1.01 + x)" for _ in range(150))
    _, scene = make_scene(text)
    assert scene.n_nodes > 900
    codes_mid = scene.frame(scene.n_steps // 2).state_codes
    codes_end = scene.frame(scene.n_steps - 1).state_codes
    assert (codes_mid != codes_end).any()


@pytest.mark.parametrize("step", [-5, 10_000])
def test_frames_clamp_the_step(step):
    _, scene = make_scene("y = exp(x)")
    assert -1 <= scene.frame(step).step < scene.n_steps


def assert_states_match_the_trace(scene, trace):
    for step in range(-1, len(trace.steps)):
        codes = scene.state_codes(step)
        for i, nid in enumerate(scene.node_ids):
            assert STATE_NAMES[codes[i]] == trace.state_at(int(nid), step).value, (step, nid)


# States by hand, one letter a node (in the scene's order), one row a step from -1 (before
# any): N not computed, V value computed, G grad computed, C grad cleared (retain_grad=False
# drops a non-leaf's gradient once the Function that made it has run backward), K constant.
KNOWN_STATES = {
    # x, Square, a, Exp, b, Square, y; forward steps 0-2, then backward of Square (3: b gets
    # its grad, y's is dropped), Exp (4: a gets its grad, b's is dropped), Square (5: x)
    "x = 0.5\na = square(x)\nb = exp(a)\ny = square(b)": [
        "V N N N N N N",
        "V V V N N N N",
        "V V V V V N N",
        "V V V V V V V",
        "V V V V G G C",
        "V V G G C G C",
        "G G C G C G C",
    ],
    # x, Add, t = x + x, Add, y; x's gradient is a sum: 1 at step 2, 3 at step 3
    "x = 3.0\ny = add(add(x, x), x)": [
        "V N N N N",
        "V V V N N",
        "V V V V V",
        "G V G G C",
        "G G C G C",
    ],
    # x, 2, Mul, t = x * 2, 1, Add, y: the constants never hold a gradient
    "x = 1.5\ny = x * 2 + 1": [
        "V K N N K N N",
        "V K V V K N N",
        "V K V V K V V",
        "V K V G K G C",
        "G K G C K G C",
    ],
}
# What the frames show: a gradient stays in view through the step that uses it (the step
# after it was computed, where backward drops it), then "grad cleared".
KNOWN_FRAMES = {
    "x = 0.5\na = square(x)\nb = exp(a)\ny = square(b)": [
        "V N N N N N N",
        "V V V N N N N",
        "V V V V V N N",
        "V V V V V V V",
        "V V V V G G G",
        "V V G G G G C",
        "G G G G C G C",
    ],
    "x = 3.0\ny = add(add(x, x), x)": [
        "V N N N N",
        "V V V N N",
        "V V V V V",
        "G V G G G",
        "G G G G C",
    ],
    "x = 1.5\ny = x * 2 + 1": [
        "V K N N K N N",
        "V K V V K N N",
        "V K V V K V V",
        "V K V G K G G",
        "G K G G K G C",
    ],
}
_LETTERS = {
    "N": "not_computed",
    "V": "value",
    "G": "grad",
    "C": "grad_cleared",
    "K": "constant",
}


def _rows(codes_of_step, n_steps):
    names = {v: k for k, v in _LETTERS.items()}
    return [" ".join(names[STATE_NAMES[c]] for c in codes_of_step(s)) for s in range(-1, n_steps)]


@pytest.mark.parametrize("text", list(KNOWN_STATES))
def test_the_states_of_known_programs_are_the_hand_written_ones(text):
    _, scene = make_scene(text)
    assert _rows(scene.state_codes, scene.n_steps) == KNOWN_STATES[text]
    assert _rows(lambda s: scene.frame(s).state_codes, scene.n_steps) == KNOWN_FRAMES[text]


def test_scene_states_equal_trace_state_at_with_nested_grads():
    ev, scene = make_scene("x = 2.0\ny = x ** 4 - 2 * x ** 2\ng = grad(y, x)\nh = grad(g, x)")
    assert_states_match_the_trace(scene, ev.trace)


def test_script_views_and_freed_nodes_match_the_trace():
    import numpy as np

    import autodiff.functions as F
    from autodiff import Variable, trace
    from autodiff.trace import view_for_root

    with trace.record() as t:
        x = Variable(np.array(0.5), name="x")
        for _ in range(3):
            y = F.exp(F.sin(x))
            x.cleargrad()
            y.backward()
        del y
    assert any(t.freed(n) for n in t.variables)
    whole = Scene(t, compute_layout(t))
    assert_states_match_the_trace(whole, t)
    assert state_code("freed") in whole.state_codes(len(t.steps) - 1)
    view = view_for_root(t, t.backward_roots[1], 1)
    scene = Scene(view, compute_layout(view))
    assert_states_match_the_trace(scene, view)
    assert [s.phase for s in view.steps] == ["forward", "forward", "backward", "backward"]


def test_layout_by_generation_grows_along_every_edge():
    ev = evaluate("x = 2.0\ny = x ** 4 - 2 * x ** 2\ng = grad(y, x)\nh = grad(g, x)")
    layout = compute_layout(ev.trace, by_generation=True)
    layers = layout.layers
    for u, v in layout.edges:
        assert layers[v] > layers[u]
    graph = ev.trace.graph
    gens = [graph.nodes[int(n)]["generation"] for n in layout.node_ids]
    functions = [graph.nodes[int(n)]["kind"] == "function" for n in layout.node_ids]
    assert all(layers[i] >= 2 * gens[i] + functions[i] for i in range(len(gens)))


def test_badges_follow_the_palette():
    _, scene = make_scene("x = 1.5\nd = x - x\ny = log(d) * x")
    _, light, _ = scene.overlay_arrays("nonfinite")
    scene.set_palette("dark")
    _, dark, _ = scene.overlay_arrays("nonfinite")
    assert tuple(light[0]) == tuple(LIGHT.error)
    assert tuple(dark[0]) == tuple(DARK.error) != tuple(light[0])


def test_max_label_lines_is_the_longest_label_at_any_step():
    for text in ("x = 0.5\na = square(x)\ny = exp(a)", "W = randn(2, 3)\ny = sum(W * 3)"):
        _, scene = make_scene(text)
        longest = max(
            scene.label(i, step).count("\n") + 1
            for step in range(-1, scene.n_steps)
            for i in range(scene.n_nodes)
        )
        assert scene.max_label_lines() == longest, text


def test_variable_boxes_are_as_wide_as_the_longest_label():
    from viewer.model.layout.compute import CHARACTERS_PER_UNIT, MAX_VARIABLE_WIDTH

    _, narrow = make_scene("x = 0.5\ny = exp(x)")
    assert narrow.geometry.variable_size[0] == 1.0  # short labels: the usual box
    _, wide = make_scene("W = [[0.1234, -0.5678, 0.9012]]\ny = sum(W * W)")
    longest = max(
        len(line)
        for i in range(wide.n_nodes)
        for step in range(-1, wide.n_steps)
        for line in wide.label(i, step).split("\n")
    )
    width = wide.geometry.variable_size[0]
    assert 1.0 < width <= MAX_VARIABLE_WIDTH
    assert width * CHARACTERS_PER_UNIT >= min(longest, MAX_VARIABLE_WIDTH * CHARACTERS_PER_UNIT)
    # the layout keeps the wider boxes apart
    pos, half = wide.geometry.positions, wide.geometry.half_sizes
    for a in range(wide.n_nodes):
        for b in range(a + 1, wide.n_nodes):
            if abs(pos[a, 1] - pos[b, 1]) < 1e-9:
                assert abs(pos[a, 0] - pos[b, 0]) >= half[a, 0] + half[b, 0]


def test_an_unnamed_scalar_not_computed_yet_says_so_instead_of_a_blank_box():
    """QA: residual_mlp's and cnn_step's loss was an empty box until its step ran."""
    t = evaluate("x = 0.5\ny = x * x + exp(x)").trace
    scene = Scene(t, compute_layout(t))
    unnamed = [
        i
        for i, nid in enumerate(scene.node_ids)
        if scene.kinds[i] == "variable" and not scene.names[i] and t.node(int(nid))["shape"] == ()
    ]
    assert unnamed
    before = scene.frame(-1)
    after = scene.frame(scene.n_steps - 1)
    for i in unnamed:
        assert before.labels[i] == "scalar"
        assert after.labels[i] and after.labels[i] != "scalar"  # its value, once computed
