"""A script that uses torch opens like any script: one graph per backward(), in torch's order
with torch's values (checked against what the program printed from torch's own hooks), a
bounded sample of a long loop's passes with every pass's loss logged, the held flag and the
leak audit for torch objects, both engines in one script, and no torch where none is used."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest

from viewer.model import Document
from viewer.model.document.examples import list_examples
from viewer.model.panels import plots
from viewer.model.panels.plots import document_training_curves
from viewer.model.scripts.pass_sampling import FLAG_HELD, FLAG_NONFINITE
from viewer.model.scripts.run import ScriptRun

ROOT = Path(__file__).resolve().parents[3]

# The program reports, from torch's own hooks, what torch ran in each backward: every node
# behind the loss (AccumulateGrad aside), in order, with the grad_outputs it was passed and the
# grad_inputs it produced; then each step's loss and, at the end, the parameters' gradients.
TRAINING = textwrap.dedent(
    """
    import json
    import torch
    from torch import nn

    def watch(root, log):
        seen, todo = set(), [root.grad_fn]
        while todo:
            node = todo.pop()
            if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
                continue
            seen.add(id(node))

            def hook(gi, go, node=node):
                as_list = lambda gs: [None if g is None else g.tolist() for g in gs]
                log.append([node.name(), as_list(go), as_list(gi)])

            node.register_hook(hook)
            todo.extend(p for p, _ in node.next_functions)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    for step in range(3):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        log = []
        watch(loss, log)
        loss.backward()
        grads = {n: p.grad.tolist() for n, p in model.named_parameters()}
        print("STEP " + json.dumps({"loss": loss.item(), "log": log, "grads": grads}))
        opt.step()
    """
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _array(snap):
    return None if snap is None else snap.array


def _torch_node(view, fid):
    """torch's name for a function node (a recording read back from the worker's file is a
    plain trace: the name is among the node's parameters)."""
    return dict(view.function_params(fid) or {}).get("torch_node")


def test_a_torch_training_script_opened_through_the_document_is_torchs_own_backward(tmp_path):
    pytest.importorskip("torch")
    doc = Document()
    assert doc.run_script(_write(tmp_path, "train.py", TRAINING))
    result = doc.script_result
    assert result.ok, result.error
    printed = [
        json.loads(line[5:]) for line in result.stdout.splitlines() if line.startswith("STEP ")
    ]
    assert len(printed) == 3
    assert len(result.graphs) == 3  # one graph per backward()
    np.testing.assert_array_equal(result.passes.loss, [p["loss"] for p in printed])
    assert result.passes.iteration.tolist() == [0, 1, 2]
    for k, (graph, report) in enumerate(zip(result.graphs, printed, strict=True)):
        assert graph.number == k and graph.backward_pass >= 0
        view = result.view(k)
        steps = [s for s in view.steps if s.phase == "backward"]
        assert steps, k
        # torch's order, and what each node was passed and produced
        assert [_torch_node(view, s.function) for s in steps] == [e[0] for e in report["log"]]
        for s, (name, gys, gxs) in zip(steps, report["log"], strict=True):
            for mine, theirs in zip(s.output_grads, gys, strict=True):
                if theirs is None:
                    assert mine is None, name
                else:
                    np.testing.assert_array_equal(
                        _array(mine), np.asarray(theirs, np.float32), err_msg=name
                    )
            produced = [np.asarray(g, np.float32) for g in gxs if g is not None]
            recorded = [_array(g) for g in s.input_grads if g is not None]
            assert len(recorded) == len(produced), name
            for mine, theirs in zip(recorded, produced, strict=True):
                np.testing.assert_array_equal(mine, theirs, err_msg=name)
        # the loss, and the parameters' gradients once the pass ended, as the program printed
        last = len(view.steps) - 1
        root = graph.root
        np.testing.assert_array_equal(_array(view.value_at(root, last)), np.float32(report["loss"]))
        names = {view.node(v)["name"]: v for v in view.parameters()}
        assert set(names) == set(report["grads"])
        for name, grad in report["grads"].items():
            np.testing.assert_array_equal(
                _array(view.grad_at(names[name], last)), np.asarray(grad, np.float32), name
            )
        # the Training plot's gradient norms are those gradients' norms
        labels = result.passes.parameter_labels
        for name, grad in report["grads"].items():
            column = next(i for i, label in enumerate(labels) if label.startswith(name + " "))
            norm = np.linalg.norm(np.asarray(grad, np.float64))
            assert result.passes.grad_norms[column, k] == pytest.approx(norm, rel=1e-6)
    assert not result.passes.flags.any()  # a correct loop: no NaN, no held graph
    assert result.leak_report is not None and result.leak_report.clean
    # the Training plot draws every pass's loss and gradient norms, from the pass log
    curves = document_training_curves(doc)
    np.testing.assert_array_equal(curves.loss, result.passes.loss)
    assert curves.labels == tuple(result.passes.parameter_labels)
    # the document shows the last graph, and plays its backward to the end
    doc.playback.to_end()
    assert doc.playback.at_end and doc.playback.n_steps > 0


def test_a_long_torch_loop_keeps_a_bounded_sample_and_every_loss(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from autodiff.trace.pytorch import TorchTrace

    made = []  # every recording the run makes, weakly
    init = TorchTrace.__init__

    def watched(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(TorchTrace, "__init__", watched)
    script = _write(
        tmp_path,
        "long.py",
        """
        import torch
        w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
        for i in range(3000):
            w.grad = None
            loss = (w * (i % 7)).sum()
            loss.backward()
            print(loss.item())
        """,
    )
    run = ScriptRun(script, capture=True)
    run.max_passes = 20
    result = run.run()
    assert result.ok, result.error
    printed = [float(line) for line in result.stdout.split()]
    assert len(printed) == 3000
    np.testing.assert_array_equal(result.passes.loss, printed)  # every pass's loss
    assert result.passes.iteration.tolist() == list(range(3000))
    numbers = [g.number for g in result.graphs]
    assert len(numbers) <= 20 + 1 and numbers[0] == 0 and numbers[-1] == 2999
    assert numbers == sorted(numbers) and "of 3,000" in result.sampling
    # the passes not kept are freed: only the kept ones' recordings are alive
    gc.collect()
    alive = [ref for ref in made if ref() is not None]
    assert len(made) > 2000 and len(alive) == len({id(g.trace) for g in result.graphs})
    # a kept pass late in the run is its own graph, numbered as the run counts
    k = len(result.graphs) - 1
    view = result.view(k)
    steps = [s for s in view.steps if s.phase == "backward"]
    assert steps and _torch_node(view, steps[0].function) == "SumBackward0"


def test_a_held_torch_graph_is_flagged_and_reported_as_a_leak(tmp_path):
    pytest.importorskip("torch")
    _write(tmp_path, "history.py", "LOSSES = []\n")
    script = _write(
        tmp_path,
        "held.py",
        """
        import torch
        import history
        w = torch.nn.Parameter(torch.ones(3))
        for i in range(4):
            w.grad = None
            loss = (w * float(i + 1)).sum()
            history.LOSSES.append(loss)  # keeps every iteration's graph alive
            loss.backward()
        """,
    )
    result = ScriptRun(script, capture=True).run()
    assert result.ok, result.error
    flags = result.passes.flags
    # each pass is found held when the next one runs; the last one by the audit
    assert [bool(f & FLAG_HELD) for f in flags] == [True, True, True, False]
    assert "graph still held" in result.graphs[0].title
    survivors = result.leak_report.survivors
    assert [s.label for s in survivors] == [f"torch loss of pass #{k}" for k in range(1, 5)]
    assert all("LOSSES" in s.held_by for s in survivors)
    # a leaf outside any module is plotted too, by the script's name for it (as the graph
    # names it) and its shape: |w.grad| = 3 (i + 1)
    assert result.passes.parameter_labels == ["w (3,)"]
    np.testing.assert_allclose(result.passes.grad_norms[0], np.sqrt(3) * np.arange(1, 5))


def test_a_torch_leaf_of_no_module_is_named_by_the_script_in_the_plot_and_the_graph(tmp_path):
    """A tensor made with requires_grad at the script's top level is called what the script
    calls it, in the Training plot and on the graph; one only a function's local names is
    numbered (a local does not say which tensor it is)."""
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "named.py",
        """
        import torch
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        def step():
            v = torch.ones(2, requires_grad=True)
            loss = (x * x).sum() + (v * 3.0).sum()
            loss.backward()
        for _ in range(2):
            step()
        """,
    )
    result = ScriptRun(script, capture=True).run()
    assert result.ok, result.error
    labels = result.passes.parameter_labels
    # (each call's v is a tensor of its own)
    assert sorted(labels) == ["leaf #1 (2,)", "leaf #2 (2,)", "x (3,)"]
    view = result.view(len(result.graphs) - 1)
    leaves = [view.node(v) for v in view.variables if view.node(v)["generation"] == 0]
    named = {a["shape"]: a["name"] for a in leaves if not a["constant"]}
    assert named == {(3,): "x", (2,): None}


def test_a_clean_torch_loop_is_not_flagged_held_nor_leaky(tmp_path):
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "clean.py",
        """
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        losses = []
        for i in range(4):
            w.grad = None
            loss = (w * float(i + 1)).sum()
            losses.append(loss.item())  # a number, not the graph
            loss.backward()
        """,
    )
    result = ScriptRun(script, capture=True).run()
    assert result.ok, result.error
    assert not result.passes.flags.any()
    assert result.leak_report.clean


def test_a_nan_in_a_torch_pass_is_flagged(tmp_path):
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "nan.py",
        """
        import torch
        lin = torch.nn.Linear(2, 1)
        for scale in (1.0, float("nan"), 1.0):
            lin.zero_grad()
            lin(torch.ones(1, 2) * scale).sum().backward()
        """,
    )
    result = ScriptRun(script, capture=True).run()
    assert result.ok, result.error
    assert [bool(f & FLAG_NONFINITE) for f in result.passes.flags] == [False, True, False]
    assert sorted(result.passes.parameter_labels) == ["bias (1,)", "weight (1, 2)"]
    labels, norms = result.passes.parameter_labels, result.passes.grad_norms
    weight, bias = norms[labels.index("weight (1, 2)")], norms[labels.index("bias (1,)")]
    assert np.isnan(weight[1]) and np.isfinite(weight[[0, 2]]).all()  # the NaN is the weight's
    np.testing.assert_array_equal(bias, [1.0, 1.0, 1.0])


def test_a_script_using_both_engines_gets_both(tmp_path):
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "both.py",
        """
        import numpy as np
        import torch
        from autodiff import Variable
        import autodiff.functions as F

        x = Variable(np.array([1.0, 2.0]), name="x")
        y = F.sum(F.exp(x))
        y.name = "y"
        y.backward()
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        t.exp().sum().backward()
        z = F.sum(x * x)
        z.backward()
        """,
    )
    doc = Document()
    assert doc.run_script(script)
    result = doc.script_result
    assert result.ok, result.error
    assert [g.number for g in result.graphs] == [0, 1, 2]
    np.testing.assert_allclose(result.passes.loss, [np.exp([1, 2]).sum()] * 2 + [5.0])
    ops = []
    for k in range(3):
        view = result.view(k)
        ops.append([_torch_node(view, s.function) for s in view.steps if s.phase == "backward"])
    assert ops[1] == ["SumBackward0", "ExpBackward0"]  # torch's own nodes
    assert ops[0] == [None, None] and ops[2] == [None, None]  # the engine's Functions
    assert result.leak_report.clean


def test_a_script_that_does_not_import_torch_never_has_it_imported(tmp_path):
    script = _write(
        tmp_path,
        "plain.py",
        """
        import numpy as np
        from autodiff import Variable
        import autodiff.functions as F
        x = Variable(np.array(2.0))
        F.exp(x).backward()
        """,
    )
    # what the worker does: run the script, collect, audit and write the result
    code = textwrap.dedent(
        f"""
        import sys
        import autodiff.trace.formats.npz
        import viewer.model.scripts.worker
        from autodiff.trace import trace_to_npz
        from viewer.model.scripts.run import ScriptRun
        result = ScriptRun({str(script)!r}, capture=False).run()
        assert result.ok and result.graphs, result.error
        trace_to_npz(result.trace, {str(tmp_path / "t.npz")!r})
        print("torch" in sys.modules, file=sys.stderr)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"


TORCH_EXAMPLES = [e.stem for e in list_examples() if "torch" in e.requires]


def test_the_torch_examples_are_bundled_and_marked():
    assert set(TORCH_EXAMPLES) == {"torch_mlp", "torch_cnn", "torch_resnet_block"}


def test_a_torch_example_without_torch_installed_says_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    doc = Document()
    assert doc.load_example("torch_mlp") is False
    assert 'pip install "autodiff-viewer[torch]"' in str(doc.last_error)
    assert "needs torch" in str(doc.last_error)


@pytest.mark.parametrize("stem", TORCH_EXAMPLES)
def test_a_torch_example_opens_with_no_alarm(stem):
    pytest.importorskip("torch")
    doc = Document()
    result = doc.load_example(stem).run()
    assert result.ok, result.error
    assert doc.apply_script_result(result)
    assert not result.passes.flags.any(), result.passes.flags  # no NaN, no held graph
    assert result.leak_report is not None and result.leak_report.clean
    assert all(s.phase in ("forward", "backward") for s in doc.trace.steps)
    losses = [float(line.split()[-1]) for line in result.stdout.splitlines() if "loss" in line]
    np.testing.assert_allclose(result.passes.loss, losses[: len(result.passes.loss)], rtol=1e-6)
    if len(losses) > 1:
        assert losses == sorted(losses, reverse=True)  # the loss falls at every step
    doc.playback.to_end()
    assert doc.playback.at_end and doc.playback.n_steps > 0


def test_the_resnet_blocks_backward_runs_the_downsample_branch_before_bn2():
    pytest.importorskip("torch")
    doc = Document()
    result = doc.load_example("torch_resnet_block").run()
    assert result.ok, result.error
    view = result.view(len(result.graphs) - 1)
    order = [view.node(s.function)["scope"] for s in view.steps if s.phase == "backward"]
    first_downsample = next(i for i, s in enumerate(order) if "downsample" in s)
    bn2 = next(i for i, s in enumerate(order) if s.endswith("bn2"))
    assert first_downsample < bn2
    # in the forward (generation order) the downsample branch is made after bn2
    forward = [view.node(s.function)["scope"] for s in view.steps if s.phase == "forward"]
    made = next(i for i, s in enumerate(forward) if "downsample" in s)
    assert made > next(i for i, s in enumerate(forward) if s.endswith("bn2"))


def test_the_worker_lifts_its_address_space_backstop_once_torch_is_imported(tmp_path):
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "limits.py",
        """
        import resource
        before = resource.getrlimit(resource.RLIMIT_AS)[0]
        import torch
        after = resource.getrlimit(resource.RLIMIT_AS)[0]
        print(before, after)
        """,
    )
    doc = Document()
    doc.script_memory_mb = 800  # the default: a resident limit, and an address space backstop
    result = doc.prepare_script(script).run()  # (it builds no graph: its output is all)
    assert result.ok, result.error
    before, after = (int(v) for v in result.stdout.split())
    assert 0 < before < 2**62 and (after > before or after == -1)


def test_a_cancelled_torch_loop_shows_the_passes_it_ran(tmp_path):
    pytest.importorskip("torch")
    import time

    from viewer.model.scripts.process import ScriptProcess

    script = _write(
        tmp_path,
        "forever.py",
        """
        import torch
        lin = torch.nn.Linear(4, 1)
        x = torch.randn(8, 4)
        while True:
            lin.zero_grad()
            lin(x).pow(2).mean().backward()
            print("pass", flush=True)
        """,
    )
    run = ScriptProcess(script, max_passes=20)
    printed: list[str] = []
    run.output_written.connect(printed.append)
    run.start()
    deadline = time.monotonic() + 60
    while "".join(printed).count("pass") < 30 and time.monotonic() < deadline:
        time.sleep(0.1)
    run.cancel()
    assert run.wait(60)
    result = run.result
    assert result.cancelled
    assert len(result.passes) >= 2 and len(result.graphs) <= 20 + 1
    last = result.graphs[-1]
    # the last pass it ran, numbered as the log (a Cancel that lands as the pass is logged
    # waits for its graph: viewer.model.scripts.cancelling)
    assert last.number == len(result.passes) - 1
    steps = [s for s in result.view(len(result.graphs) - 1).steps if s.phase == "backward"]
    assert steps


@pytest.mark.parametrize("keep", [20, 10_000])
def test_a_cancelled_torch_runs_steps_count_against_what_cancel_may_send(tmp_path, keep):
    """A cancelled run sends what it recorded only up to ``keep_on_cancel`` steps (the app's
    ``worker.CANCEL_KEEP_STEPS``): the steps of its torch recordings count too."""
    pytest.importorskip("torch")
    import time

    script = _write(
        tmp_path,
        "stuck.py",
        """
        import pathlib
        import time
        import torch
        lin = torch.nn.Linear(4, 1)
        x = torch.randn(8, 4)
        for _ in range(5):
            lin.zero_grad()
            lin(x).pow(2).mean().backward()
        pathlib.Path("ready").write_text("yes")
        while True:
            time.sleep(0.01)
        """,
    )
    run = ScriptRun(script, capture=True)
    run.keep_on_cancel = keep
    run.start()
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    run.cancel()
    assert run.wait(60), "the script did not stop"
    result = run.result
    assert result.cancelled and len(result.passes) == 5
    if keep == 20:
        assert result.graphs == [] and result.trace is None
        assert result.error_message == (
            "what it recorded is not kept: more than 20 steps cannot be sent in the time "
            "Cancel allows"
        )
    else:
        assert [g.number for g in result.graphs] == [0, 1, 2, 3, 4]
        assert result.error_message is None
        traces = {id(g.trace): g.trace for g in result.graphs}.values()
        assert sum(t.count_steps() for t in traces) > 20  # what the cap of 20 counted


def test_a_scripts_own_parameter_is_named_by_its_one_top_level_name(tmp_path):
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "free.py",
        """
        import torch
        w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
        a = b = torch.nn.Parameter(torch.tensor([0.5]))  # two names: neither is shown

        def step():
            loss = (w * w).sum() + (a * w).sum()
            loss.backward()

        for _ in range(3):
            step()
        """,
    )
    run = ScriptRun(script, capture=True)
    run.max_passes = 2  # passes past the first in recordings of their own
    result = run.run()
    assert result.ok, result.error
    assert len(result.graphs) >= 2
    for k in range(len(result.graphs)):
        view = result.view(k)
        names = {view.node(v)["shape"]: view.node(v)["name"] for v in view.parameters()}
        assert names == {(2,): "w", (1,): None}, k


def test_a_torch_script_where_torch_is_missing_fails_saying_what_to_install(tmp_path):
    script = _write(
        tmp_path,
        "no_torch.py",
        """
        import sys
        sys.modules["torch"] = None  # as if torch were not installed (this worker only)
        import torch
        """,
    )
    doc = Document()
    result = doc.prepare_script(script).run()
    assert not result.ok
    assert result.error_summary == (
        "no_torch.py line 4: ModuleNotFoundError: import of torch halted; None in sys.modules"
        ' (install it: pip install "autodiff-viewer[torch]")'
    )
    assert not doc.apply_script_result(result)  # reported, and the app goes on
    assert 'pip install "autodiff-viewer[torch]"' in str(doc.last_error)


def test_a_torch_program_without_backward_shows_its_last_output(tmp_path):
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "forward.py",
        """
        import torch
        m = torch.nn.Linear(3, 2)
        y = m(torch.ones(1, 3)).relu()
        """,
    )
    doc = Document()
    assert doc.run_script(script)
    (graph,) = doc.script_result.graphs
    assert graph.title.startswith("torch output #") and graph.backward_pass < 0
    ops = [s.op for s in doc.trace.steps]
    assert ops == ["t", "linear", "relu"] and all(s.phase == "forward" for s in doc.trace.steps)


def test_a_scripts_backward_runs_with_the_recorders_mode_off_as_records_does(tmp_path):
    """The pass log's wrappers of torch's backward let the recorder take its dispatch mode off
    for each pass (its arithmetic is not the program's), and the passes still get recordings
    of their own once the sample's head is full."""
    pytest.importorskip("torch")
    script = _write(
        tmp_path,
        "modes.py",
        """
        import torch
        lin = torch.nn.Linear(3, 2)
        x = torch.randn(4, 3)
        for i in range(6):
            lin.zero_grad()
            y = lin(x)
            outside = torch._C._len_torch_dispatch_stack()
            depths = []
            y.register_hook(lambda g: depths.append(torch._C._len_torch_dispatch_stack()))
            y.pow(2).mean().backward()
            print("DEPTHS", outside, depths[0], torch._C._len_torch_dispatch_stack())
        """,
    )
    run = ScriptRun(script, capture=True)
    run.max_passes = 4
    result = run.run()
    assert result.ok, result.error
    printed = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("DEPTHS")]
    assert printed == [["1", "0", "1"]] * 6
    assert [g.number for g in result.graphs][:2] == [0, 1]
    traces = {id(g.trace) for g in result.graphs}
    assert len(traces) > 1  # switched between passes
    for k in range(len(result.graphs)):
        view = result.view(k)
        assert [s.op for s in view.steps if s.phase == "forward"][-2:] == ["pow", "mean"]
        assert [s for s in view.steps if s.phase == "backward"]


def test_a_torch_input_that_requires_grad_is_left_out_of_the_gradient_norm_curves(tmp_path):
    # an input made with requires_grad (to look at its gradient) gets .grad like the
    # weights; the Training plot draws the nn.Parameters' norms and names the input
    pytest.importorskip("torch")
    script = tmp_path / "probe.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn
            torch.manual_seed(0)
            model = nn.Linear(3, 1)
            x = torch.randn(4, 3, requires_grad=True)
            norms = []
            for step in range(2):
                model.zero_grad()
                x.grad = None
                model(x).pow(2).mean().backward()
                norms.append({n: float(p.grad.norm()) for n, p in model.named_parameters()})
            print(repr(norms))
            """
        )
    )
    doc = Document()
    assert doc.run_script(script), doc.script_result.error
    norms = eval(doc.script_result.stdout.strip().splitlines()[-1])
    log = doc.script_result.passes
    assert len(log.parameter_labels) == 3 and len(log.data_columns) == 1
    for curves in (document_training_curves(doc), plots.pass_log_curves(log)):
        assert len(curves.labels) == 2
        by_label = curves.norms_by_label()
        for name in ("weight", "bias"):
            label = next(k for k in by_label if k.startswith(name + " "))
            np.testing.assert_allclose(by_label[label], [n[name] for n in norms], rtol=1e-5)
        assert any(n.startswith("not drawn: ") for n in curves.notes), curves.notes
