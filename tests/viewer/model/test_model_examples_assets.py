"""The resource accessor, the example library, and every bundled expression example."""

import pytest

from viewer.model import assets
from viewer.model.document.document import Document
from viewer.model.document.examples import find_example, list_examples, read_example

EXPRESSIONS = [e for e in list_examples() if e.kind == "expression"]


def test_assets_path_and_read():
    name = "examples/square_exp_square.expr"
    assert assets.path(name).is_file()
    assert "square(exp(square(x)))" in assets.read_text(name)
    assert name in assets.names("examples/")
    assert assets.read_bytes(name).startswith(b"#")


@pytest.mark.parametrize("bad", ["nope.txt", "examples/missing.expr", "../pyproject.toml", ""])
def test_unknown_resource_raises_value_error_listing_known(bad):
    with pytest.raises(ValueError) as info:
        assets.path(bad)
    if bad and ".." not in bad:
        assert "examples/diamond.expr" in str(info.value)


def test_examples_have_titles_kinds_and_categories():
    examples = {e.stem: e for e in list_examples()}
    for stem in (
        "square_exp_square",
        "add_add",
        "diamond",
        "sphere",
        "matyas",
        "goldstein",
        "tanh_x2",
        "higher_order",
        "nan_log",
        "newton",
        "small_mlp",
        "residual_mlp",
        "cnn_step",
        "rnn_bptt",
        "micrograd_mlp",
    ):
        assert stem in examples
    # the planted bugs: one classic gradient bug each, with a header saying what to look for
    for stem in ("forgot_cleargrads", "broadcast_loss", "dead_relu", "history_append"):
        assert examples[stem].category == "debugging" and examples[stem].kind == "script"
        assert "What to look for" in examples[stem].read()
    assert examples["diverging_lr"].category == "debugging"
    assert examples["diamond"].kind == "expression"
    assert examples["newton"].kind == "script"
    assert examples["higher_order"].category == "higher-order"
    assert examples["nan_log"].category == "debugging"
    assert examples["square_exp_square"].category == "basics"
    assert examples["square_exp_square"].title.startswith("y = square(exp(square(x)))")
    assert all(e.title for e in examples.values())
    assert "Category" not in examples["higher_order"].description


def test_find_example():
    assert find_example("diamond") == find_example("examples/diamond.expr")
    assert "add(square(a), square(a))" in read_example("diamond.expr")
    with pytest.raises(ValueError, match="known examples"):
        find_example("nonexistent")


@pytest.mark.parametrize("example", EXPRESSIONS, ids=lambda e: e.stem)
def test_every_bundled_expression_runs_and_plays_to_the_end(example):
    doc = Document()
    errors = []
    doc.error_raised.connect(errors.append)
    assert doc.load_example(example.stem) is True, errors
    playback = doc.playback
    assert playback.n_steps > 0
    playback.play()
    frames = 0
    while playback.tick():
        frame = doc.frame()
        assert frame.step == playback.index
        frames += 1
    assert playback.at_end and frames == playback.n_steps
    assert any(s.phase == "backward" for s in playback.steps)


def test_seed_values_of_the_examples():
    doc = Document()
    doc.load_example("square_exp_square")
    assert float(doc.evaluation.leaves["x"].grad.data) == pytest.approx(3.297442541400256)
    doc.load_example("goldstein")
    grads = {k: float(v.grad.data) for k, v in doc.evaluation.leaves.items()}
    assert grads == {"x": pytest.approx(-5376.0), "y": pytest.approx(8064.0)}
    doc.load_example("diamond")
    assert float(doc.evaluation.leaves["x"].grad.data) == 64.0
    doc.load_example("nan_log")
    assert doc.evaluation.nonfinite is not None
    assert doc.playback.first_nonfinite() is not None


@pytest.mark.parametrize(
    "stem", ["newton", "small_mlp", "residual_mlp", "cnn_step", "rnn_bptt", "micrograd_mlp"]
)
def test_bundled_scripts_of_this_module_run(stem):
    doc = Document()
    run = doc.load_example(stem)
    result = run.run()
    assert result.ok, result.error
    assert doc.apply_script_result(result)
    playback = doc.playback
    playback.to_end()
    assert playback.at_end and playback.n_steps > 0


def test_the_residual_mlp_runs_six_identical_blocks_in_scopes():
    doc = Document()
    result = doc.load_example("residual_mlp").run()
    assert result.ok, result.error
    assert [float(line.split()[-1]) for line in result.stdout.splitlines()] == sorted(
        (float(line.split()[-1]) for line in result.stdout.splitlines()), reverse=True
    )  # the loss falls at every step
    trace = result.trace
    blocks = [r for r in trace.scopes() if r.cls == "Block"]
    assert [r.path for r in blocks[:6]] == [f"ResidualMLP/b{i}" for i in range(6)]
    assert len(blocks) == 6 * 5  # five steps
    ops = {}
    scopes = trace.node_scopes()
    for f in trace.functions:
        row = trace.scopes()[scopes[f]]
        while row.depth > 2:
            row = trace.scopes()[row.parent]
        if row.cls == "Block":
            ops.setdefault(row.path, []).append(trace.node(f)["op"])
    assert len({tuple(v) for v in ops.values()}) == 1  # the same ops in every block


@pytest.mark.parametrize(("stem", "word"), [("cnn_step", "loss"), ("rnn_bptt", "average loss")])
def test_the_cnn_and_rnn_examples_learn(stem, word):
    result = Document().load_example(stem).run()
    assert result.ok, result.error
    losses = [float(line.rsplit(" ", 1)[-1]) for line in result.stdout.splitlines() if word in line]
    assert len(losses) == 3 and losses == sorted(losses, reverse=True)


def test_the_micrograd_example_prints_micrograds_numbers_and_opens_as_a_script():
    doc = Document()
    result = doc.load_example("micrograd_mlp").run()
    assert result.ok, result.error
    # printed by karpathy/micrograd 0.1.0 for the same program (reference values)
    assert result.stdout.splitlines() == [
        "step 0: loss 18.432196",
        "step 1: loss 8.705391",
        "step 2: loss 4.462660",
    ]
    assert doc.apply_script_result(result)
    assert [g.title.split(" · ")[2] for g in result.graphs] == [
        "loss 18.4",
        "loss 8.71",
        "loss 4.46",
    ]
    assert "module" in doc.scene.kinds  # the neurons' scopes


def test_truncated_bptt_graphs_stop_at_the_cut_and_mark_it():
    doc = Document()
    result = doc.load_example("rnn_bptt").run()
    assert result.ok, result.error
    assert doc.apply_script_result(result)

    def cuts():
        return [n for n, marks in doc.scene.overlays.items() for m in marks if m.kind == "cut"]

    sizes = []
    previous: set[int] = set()
    for k in range(len(result.graphs)):
        assert doc.show_script_graph(k)
        view = doc.trace
        detached = view.detached()
        live = set(view.variables) | set(view.functions)
        live -= detached
        sizes.append(len(live))
        marked = cuts()
        # six windows an epoch; reset_state() starts each epoch's first one from no state
        assert len(marked) == (0 if k % 6 == 0 else 1), k
        for n in marked:  # the window's starting state: a leaf of this graph
            assert view.creator_of(n) == -1 and view.node(n)["kind"] == "variable"
            assert n not in detached and view.base.creator_of(n) in detached
        # the history it was cut from is drawn, greyed: the window before, never stepped
        assert bool(detached) == (k % 6 != 0), k
        assert detached <= previous, k
        assert 0 < len(detached) <= len(live) if k % 6 else True
        for step in view.steps:
            touched = {step.function, *step.inputs, *step.outputs}
            assert not touched & detached, (k, step.index)
        assert doc.scene.detached.sum() > 0 if k % 6 else not doc.scene.detached.any()
        previous = live
    assert len(sizes) == 18 and len({sizes[k] for k in range(18) if k % 6}) == 1  # no history


def test_a_script_graph_exports_as_dot_and_graphml_with_its_cut(tmp_path):
    """A TraceView (one graph of a script's run) exports; DOT used to raise AttributeError."""
    doc = Document()
    result = doc.load_example("rnn_bptt").run()
    assert result.ok and doc.apply_script_result(result)
    assert doc.show_script_graph(3)
    assert doc.export_data(tmp_path / "g.dot"), doc.last_error
    dot = (tmp_path / "g.dot").read_text()
    assert "fillcolor=gray92" in dot and "[style=dashed, color=gray60]" in dot
    # only the scopes around this graph's nodes, not every window's of the run
    assert dot.count("subgraph cluster_") < len(doc.trace.scopes()) / 4
    assert doc.export_data(tmp_path / "g.graphml"), doc.last_error


def test_a_script_graph_saves_the_whole_run_and_the_saved_trace_marks_every_cut(tmp_path):
    """Document.save_trace refused a script's graph ('there is no trace to save'); opened
    again, the whole recording shows each cut where its window began."""
    doc = Document()
    result = doc.load_example("rnn_bptt").run()
    assert result.ok and doc.apply_script_result(result)
    assert doc.show_script_graph(3)
    path = tmp_path / "bptt.json"
    assert doc.save_trace(path), doc.last_error
    again = Document()
    assert again.load_path(path), again.last_error
    cuts = again.trace.cuts()
    assert cuts == result.trace.cuts() and len(cuts) == 15  # 18 windows, 3 epochs
    marked = {n: m for n, ms in again.scene.overlays.items() for m in ms if m.kind == "cut"}
    assert set(marked) == set(cuts)
    for node, at in cuts.items():
        assert again.trace.creator_of(node) >= 0  # the whole run: the Function that made it
        assert f"before step {at + 1}:" in marked[node].tooltip
