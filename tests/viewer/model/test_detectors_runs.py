"""The run detectors (viewer/model/checks/detectors/runs.py) and the detectors run at a script's
end (viewer/model/scripts/run_problems.py): diverging-loss, graph-held, wrong-backward and the
run's nonfinite flags, each on a planted bug and on a correct twin, for the engine and for
PyTorch where the bug exists there; the report carried through the worker's result files."""

from __future__ import annotations

import json
import math
import sys
import textwrap

import numpy as np
import pytest
from bug_demos import demonstrates

from autodiff import Variable
from autodiff import functions as F
from viewer.model.checks import problems as P
from viewer.model.checks.detectors import runs
from viewer.model.document.examples import list_examples
from viewer.model.scripts import global_holders, result_schema
from viewer.model.scripts.pass_sampling import (
    FLAG_GRADCHECK,
    FLAG_HELD,
    FLAG_NONFINITE,
    FLAG_UNCHECKED,
)
from viewer.model.scripts.run import ScriptRun

RUN_KINDS = ("diverging-loss", "graph-held", "wrong-backward")


def _run_input(losses, flags=None, graph_of_pass=None, **extra):
    n = len(losses)
    return P.RunInput(
        losses=np.asarray(losses, dtype=float),
        flags=np.zeros(n, dtype=np.uint8) if flags is None else np.asarray(flags, np.uint8),
        numbers=range(1, n + 1),
        graph_of_pass=graph_of_pass or {},
        extra=extra,
    )


def _run_script(tmp_path, source, name="train.py", sample_functions=2, max_passes=None):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    run = ScriptRun(path)
    run.sample_functions = sample_functions
    if max_passes is not None:
        run.max_passes = max_passes
    result = run.run()
    assert result.ok, result.error
    assert result.problems is not None
    return result


def _mine(report, kind):
    return [p for p in report.problems if p.kind == kind]


def _line_of(source: str, text: str) -> int:
    return next(k for k, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# =============================================================================
# diverging-loss on logs
# =============================================================================
def test_a_loss_growing_over_successive_passes_is_named_with_its_passes_and_values():
    losses = [1.0, 0.8, 0.7, 0.9, 1.5, 3.0, 7.0, 20.0, 60.0]
    found = runs.diverging_loss(
        _run_input(losses, graph_of_pass={9: 4}, roots={4: 17}), P.Thresholds()
    )
    assert len(found) == 1
    p = found[0]
    assert (p.kind, p.severity, p.graph, p.nodes) == ("diverging-loss", "warning", 4, (17,))
    assert "pass #3" in p.message and "pass #9" in p.message
    assert "0.7" in p.message and "60" in p.message
    assert "learning rate" in p.message


def test_a_noisy_but_falling_loss_and_a_short_rise_are_not_divergence():
    rng = np.random.default_rng(0)
    n = 3000
    falling = 2.0 * np.exp(-np.arange(n) / 500) + 0.3 * rng.random(n)
    assert runs.diverging_loss(_run_input(falling), P.Thresholds()) == []
    rise = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 0.5, 0.3, 0.2, 0.1]  # grew by less than 2x, then fell
    assert runs.diverging_loss(_run_input(rise), P.Thresholds()) == []
    tiny = [1.0, 0.1, 1e-6, 2e-6, 4e-6, 8e-6, 1.6e-5, 3.2e-5]  # doubling near convergence
    assert runs.diverging_loss(_run_input(tiny), P.Thresholds()) == []


def test_a_loss_rising_within_each_epoch_but_falling_across_epochs_is_not_divergence():
    epoch = np.array([0.1, 0.3, 0.6, 1.0, 1.5, 2.0])  # the batches in the same order each epoch
    losses = np.concatenate([epoch, 0.6 * epoch, 0.3 * epoch])
    assert runs.diverging_loss(_run_input(losses), P.Thresholds()) == []


def test_the_thresholds_are_configurable():
    losses = [1.0, 1.5, 2.2, 3.5, 5.0]  # four growths in a row
    assert runs.diverging_loss(_run_input(losses), P.Thresholds()) == []
    assert runs.diverging_loss(_run_input(losses), P.Thresholds(diverging_passes=4))


def test_a_loss_turning_nan_is_an_error_and_one_nan_from_the_start_is_left_to_nonfinite():
    losses = [1.0, 2.0, 5.0, math.nan, math.nan]
    (p,) = runs.diverging_loss(_run_input(losses, graph_of_pass={4: 3}), P.Thresholds())
    assert (p.severity, p.graph) == ("error", 3)
    assert "turned nan at pass #4" in p.message and "5 at pass #3" in p.message
    assert runs.diverging_loss(_run_input([math.nan] * 4), P.Thresholds()) == []


def test_each_loss_line_is_followed_on_its_own():
    """A training loss falling and a validation loss rising, interleaved: only the validation
    line diverges, and the message names its line."""
    train = [2.0 / (k + 1) for k in range(8)]
    val = [1.0 * 2**k for k in range(8)]
    losses = [v for pair in zip(train, val, strict=True) for v in pair]
    keys = [0, 1] * 8
    run = _run_input(losses, keys=keys, lines=[10, 14], iterations=[k // 2 for k in range(16)])
    (p,) = runs.diverging_loss(run, P.Thresholds())
    assert "line 14" in p.message and "pass #2 " in p.message
    # without the keys, the iterations tell the lines apart the same way
    lines = runs.loss_lines(_run_input(losses, iterations=[k // 2 for k in range(16)]))
    assert [line.tolist() for line in lines] == [list(range(0, 16, 2)), list(range(1, 16, 2))]


def test_too_few_passes_is_said_not_silent():
    with pytest.raises(P.CannotRun):
        runs.diverging_loss(_run_input([1.0]), P.Thresholds())


# =============================================================================
# graph-held, wrong-backward, nonfinite on logs
# =============================================================================
def test_held_passes_name_the_first_the_count_the_line_and_the_holder():
    flags = [FLAG_HELD] * 4 + [0]
    run = _run_input(
        [1.0] * 5, flags, {1: 0}, keys=[0] * 5, lines=[12], roots={0: 5},
        held_by=["global 'history' (list) [0]"],
    )  # fmt: skip
    (p,) = runs.graph_held(run, P.Thresholds())
    assert (p.kind, p.severity, p.graph, p.nodes) == ("graph-held", "warning", 0, (5,))
    assert "4 passes" in p.message and "pass #1" in p.message and "line 12" in p.message
    assert "history.append(loss)" in p.message and "loss.item()" in p.message
    assert "global 'history'" in p.message
    assert runs.graph_held(_run_input([1.0] * 5), P.Thresholds()) == []
    # the recording says which were alive still a pass later: only those are a leak
    run = _run_input([1.0] * 5, flags, {3: 2}, held_long=[2, 3])
    (p,) = runs.graph_held(run, P.Thresholds())
    assert p.severity == "warning" and "2 passes" in p.message and "pass #3" in p.message
    (p,) = runs.graph_held(_run_input([1.0] * 5, flags, held_long=[]), P.Thresholds())
    assert p.severity == "info"


def test_the_scripts_global_holding_the_first_held_loss_is_named_before_the_audit():
    """``held_in`` (found in the script's globals before they are dropped) is the holder the
    message names, and the audit's holder too when the graphs outlived the program."""
    flags = [FLAG_HELD] * 4 + [0]
    run = _run_input(
        [1.0] * 5, flags, {1: 0}, held_long=[0, 1, 2], held_by=["global 'cache' (list)"],
        held_in="`history` (a list, line 9: history.append(loss))",
    )  # fmt: skip
    (p,) = runs.graph_held(run, P.Thresholds())
    assert p.severity == "warning" and "3 passes" in p.message
    assert "held by `history` (a list, line 9: history.append(loss))" in p.message
    assert "found them still held by global 'cache' (list)" in p.message
    assert "float(loss.data)" in p.message


class _Log:
    def __init__(self):
        self.entries = []


def test_global_holder_finds_the_global_reaching_the_object_through_containers():
    target = Variable(np.ones(1))
    other = Variable(np.ones(1))
    log = _Log()
    log.entries.append({"loss": target})
    namespace = {
        "__name__": "__main__",
        "loss": target,  # the object itself: no holder
        "np": np,  # modules are not entered
        "chain": F.exp(target),  # a graph reaching it is not a holder a user wrote
        "numbers": [1.0, 2.0],
        "log": log,
    }
    assert global_holders.global_holder(namespace, target) == ("log", "_Log")
    assert global_holders.global_holder({"history": [other, target]}, target) == (
        "history",
        "list",
    )
    assert global_holders.global_holder({"chain": F.exp(target)}, target) is None
    deep = [[[[[target]]]]]  # past MAX_DEPTH containers
    assert global_holders.global_holder({"deep": deep}, target) is None
    assert global_holders.global_holder(namespace, None) is None


def test_the_statements_filling_a_global_are_read_from_the_script(tmp_path):
    source = textwrap.dedent(
        """
        history = []
        seen = {}
        for i in range(3):
            history.append(i)
            seen[i] = i
        history += [4]
        other.append(history)
        """
    )
    assert global_holders.adding_lines(source, "history") == [
        (5, "history.append(i)"),
        (7, "history += [4]"),
    ]
    assert global_holders.adding_lines(source, "seen") == [(6, "seen[i] = i")]
    assert global_holders.adding_lines("def broken(:\n", "history") == []
    script = tmp_path / "s.py"
    script.write_text(source)
    words = global_holders.describe_holder(("history", "list"), script)
    assert words == "`history` (a list, filled on lines 5, 7)"
    assert global_holders.describe_holder(("seen", "dict"), script) == (
        "`seen` (a dict, line 6: seen[i] = i)"
    )
    assert global_holders.describe_holder(("log", "OrderedDict"), None) == "`log` (an OrderedDict)"


_HELD = ("referenced", "global 'cache' in lib (list)", 4, 1, (5, 6))
_CYCLE = ("cycle", "cycle: Variable 'x' .grad", 3, 1, (0,))


def test_graphs_the_leak_audit_found_referenced_at_the_end_are_held_a_cycle_is_info():
    """What the leak audit found alive at the program's end: referenced (an intermediate in a
    list, a callback's closure) is a held graph; kept only by a reference cycle, info."""
    run = _run_input([1.0, 0.5, 0.25], audit=[_HELD, _CYCLE], roots={1: 9})
    held, cycle = runs.graph_held(run, P.Thresholds())
    assert (held.severity, held.graph, held.nodes) == ("warning", 1, (5, 6))
    assert "4 nodes" in held.message and "global 'cache' in lib (list)" in held.message
    assert "float(v.data)" in held.message
    assert (cycle.severity, cycle.graph, cycle.nodes) == ("info", 1, (0,))
    assert "3 nodes" in cycle.message and "reference cycle" in cycle.message
    # a program that never called backward, and graphs survived: said all the same
    (p,) = runs.graph_held(_run_input([], audit=[_HELD]), P.Thresholds())
    assert p.severity == "warning"
    with pytest.raises(P.CannotRun):
        runs.graph_held(_run_input([], audit=[]), P.Thresholds())
    # the held passes already said it, naming the line: not said twice
    flags = [FLAG_HELD] * 4 + [0]
    run = _run_input([1.0] * 5, flags, {1: 0}, audit=[_HELD], held_by=["global 'cache'"])
    (p,) = runs.graph_held(run, P.Thresholds())
    assert p.severity == "warning" and "4 passes" in p.message


def test_a_script_that_never_called_backward_still_gets_the_audit(tmp_path):
    path = tmp_path / "keep.py"
    path.write_text(
        "import numpy as np\n"
        "import autodiff\n"
        "import autodiff.functions as F\n"
        "from autodiff import Variable\n"
        "autodiff.kept_for_later = [F.tanh(Variable(np.ones(3), name='x')) * 2.0]\n"
    )
    result = ScriptRun(path).run()
    assert result.ok, result.error
    (p,) = _mine(result.problems, "graph-held")
    assert p.severity == "warning" and "kept_for_later" in p.message
    assert p.graph == 0 and p.nodes
    clean = tmp_path / "clean.py"
    clean.write_text(path.read_text().replace("autodiff.kept_for_later = ", "y = "))
    result = ScriptRun(clean).run()
    assert result.ok and _mine(result.problems, "graph-held") == []


class _Sample:
    def __init__(self, op, result):
        self.op = op
        self.result = result


class _Sampler:
    def __init__(self, samples):
        self.samples = {object(): samples}


def test_a_failed_check_names_the_class_and_the_input_and_unchecked_passes_are_said():
    message = "Cube.backward disagrees with central differences of Cube.forward for input 0"
    sampler = _Sampler([_Sample("Cube", ("wrong", (), message)), _Sample("Sq", ("ok", (), ""))])
    flags = [0, FLAG_GRADCHECK, FLAG_GRADCHECK, FLAG_UNCHECKED]
    run = _run_input(
        [1.0] * 4, flags, {2: 1}, sampled=True, samples=sampler, wrong={1: ("Cube",)},
        op_nodes={1: {"Cube": ((7, 9), 12)}},
    )  # fmt: skip
    found = runs.wrong_backward(run, P.Thresholds())
    error, info = found
    assert (error.severity, error.graph, error.nodes, error.step) == ("error", 1, (7, 9), 12)
    assert "Cube.backward" in error.message and "input 0" in error.message
    assert "pass #2" in error.message and "2 passes flagged" in error.message
    assert info.severity == "info" and "1 of 4 passes" in info.message
    with pytest.raises(P.CannotRun, match="not gradient-checked"):
        runs.wrong_backward(_run_input([1.0] * 4, flags), P.Thresholds())


def test_the_first_nonfinite_pass_is_said_once_and_only_when_its_graph_was_not_kept():
    flags = [0, FLAG_NONFINITE, FLAG_NONFINITE, 0]
    losses = [1.0, math.nan, math.nan, 1.0]
    kept = _run_input(losses, flags, {2: 0})
    assert runs.run_nonfinite(kept, P.Thresholds()) == []  # the graph detector's, with its op
    (p,) = runs.run_nonfinite(_run_input(losses, flags, {3: 1}), P.Thresholds())
    assert (p.kind, p.severity, p.graph) == ("nonfinite", "error", None)
    assert "pass #2" in p.message and "2 passes" in p.message and "pass #3" in p.message


# =============================================================================
# Scripts: planted bugs and their correct twins (engine)
# =============================================================================
_LINEAR = """
import numpy as np
import autodiff.functions as F
from autodiff import Parameter, Variable

x = Variable(np.linspace(-1, 1, 8).reshape(8, 1))
t = Variable(3 * x.data + 1)
W = Parameter(np.zeros((1, 1)), name="W")
b = Parameter(np.zeros(1), name="b")
history = []
for i in range(20):
    loss = F.mean_squared_error(F.linear(x, W, b), t)
    W.cleargrad()
    b.cleargrad()
    loss.backward()
    W.data -= {lr} * W.grad.data
    b.data -= {lr} * b.grad.data
    history.append({kept})
"""


def test_a_too_large_learning_rate_is_found_and_a_small_one_is_not(tmp_path):
    source = _LINEAR.format(lr=3.0, kept="float(loss.data)")
    result = _run_script(tmp_path, source)
    (p,) = _mine(result.problems, "diverging-loss")
    assert p.severity == "warning"
    assert f"line {_line_of(source, 'loss.backward()')}" in p.message
    last = result.graphs[p.graph]
    assert p.nodes == (last.root,) and "pass #" in p.message
    twin = _run_script(tmp_path, _LINEAR.format(lr=0.1, kept="float(loss.data)"))
    assert [q for q in twin.problems.problems if q.kind in RUN_KINDS] == []
    assert "diverging-loss" in twin.problems.ran


def test_a_held_loss_is_found_and_a_kept_number_is_not(tmp_path):
    source = _LINEAR.format(lr=0.1, kept="loss")
    result = _run_script(tmp_path, source)
    (p,) = _mine(result.problems, "graph-held")
    # 20 passes: every root but the last two's seen alive a whole pass after the next
    assert "18 passes" in p.message and "pass #1" in p.message
    assert f"line {_line_of(source, 'loss.backward()')}" in p.message
    assert p.graph == 0 and p.nodes == (result.graphs[0].root,)
    twin = _run_script(tmp_path, _LINEAR.format(lr=0.1, kept="float(loss.data)"))
    assert _mine(twin.problems, "graph-held") == []
    assert "graph-held" in twin.problems.ran


def test_a_loss_returned_by_a_step_function_is_no_leak(tmp_path):
    """``loss = step()`` keeps the last loss while the next step's backward runs: the pass is
    flagged held, but the graph is freed one pass later, so it is said as info only."""
    source = """
    import numpy as np
    import autodiff.functions as F
    from autodiff import Parameter, Variable

    x = Variable(np.linspace(-1, 1, 8).reshape(8, 1))
    t = Variable(3 * x.data + 1)
    W = Parameter(np.zeros((1, 1)), name="W")

    def step():
        loss = F.mean_squared_error(F.matmul(x, W), t)
        W.cleargrad()
        loss.backward()
        W.data -= 0.1 * W.grad.data
        return loss

    for i in range(10):
        loss = step()
    """
    result = _run_script(tmp_path, source)
    assert (result.passes.flags[:-1] & FLAG_HELD).all()  # the flag the graph list shows
    (p,) = _mine(result.problems, "graph-held")
    assert p.severity == "info" and "not a leak" in p.message


def test_the_leak_audit_names_what_holds_the_graphs(tmp_path):
    """A list that outlives the script (a module's) still holds the losses when the audit
    runs: the problem names it."""
    source = _LINEAR.format(lr=0.1, kept="loss").replace(
        "history = []",
        "import sys, types\n"
        "sys.modules['held_cache'] = cache = types.ModuleType('held_cache')\n"
        "cache.history = history = []",
    )
    try:
        result = _run_script(tmp_path, source)
    finally:
        sys.modules.pop("held_cache", None)
    (p,) = _mine(result.problems, "graph-held")
    assert "held by global 'history' in held_cache (list)" in p.message
    assert "held by `history` (a list, line" in p.message  # the script's name for it


_CUSTOM = """
import numpy as np
import autodiff.functions as F
from autodiff import Function, Variable

class Cube(Function):
    def forward(self, x):
        return x ** 3

    def backward(self, gy):
        (x,) = self.inputs
        return {derivative} * gy

x = Variable(np.array([0.5, -1.0, 2.0]), name="x")
for i in range(3):
    y = F.sum(Cube()(x) * 2.0)
    x.cleargrad()
    y.backward()
"""


def test_a_wrong_backward_names_its_class_input_nodes_and_step_and_a_right_one_is_silent(tmp_path):
    result = _run_script(tmp_path, _CUSTOM.format(derivative="x ** 2"))
    (p,) = _mine(result.problems, "wrong-backward")
    assert p.severity == "error"
    assert "Cube.backward" in p.message and "input 0" in p.message
    view = result.view(p.graph)
    assert p.nodes and all(view.node(n)["op"] == "Cube" for n in p.nodes)
    step = view.steps[p.step]
    assert step.phase == "backward" and step.function in p.nodes
    twin = _run_script(tmp_path, _CUSTOM.format(derivative="3 * x ** 2"))
    assert _mine(twin.problems, "wrong-backward") == []
    assert "wrong-backward" in twin.problems.ran


def test_without_gradient_checks_wrong_backward_says_it_could_not_run(tmp_path):
    result = _run_script(tmp_path, _CUSTOM.format(derivative="x ** 2"), sample_functions=0)
    assert "wrong-backward" in result.problems.skipped
    assert _mine(result.problems, "wrong-backward") == []


def test_a_kept_nonfinite_pass_is_left_to_the_graph_detector(tmp_path):
    source = """
    import numpy as np
    import autodiff.functions as F
    from autodiff import Variable

    x = Variable(np.array([1.0, 2.0]), name="x")
    for v in (1.0, -1.0, 2.0):
        x.data = np.array([v, 2.0])
        loss = F.sum(F.log(x))
        x.cleargrad()
        loss.backward()
    """
    with np.errstate(all="ignore"):
        result = _run_script(tmp_path, source)
    assert result.passes.flags[1] & FLAG_NONFINITE
    assert [p for p in result.problems.problems if p.kind == "nonfinite" and p.graph is None] == []


def test_the_detectors_budget_stops_at_the_graphs_not_at_the_log(tmp_path):
    source = _LINEAR.format(lr=3.0, kept="loss")
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source))
    run = ScriptRun(path)
    run.problem_limits = P.Thresholds(budget_seconds=1e-9)
    result = run.run()
    report = result.problems
    assert report.graphs == 1 and report.graphs_total == len(result.graphs)
    # the one graph looked at is a flagged one; the run detectors still saw every pass
    assert {p.kind for p in report.problems} >= {"diverging-loss", "graph-held"}


# =============================================================================
# The report through the worker's channel, after its result files
# =============================================================================
def test_the_worker_sends_the_report_and_the_app_reads_it_back(tmp_path):
    from viewer.model.scripts.process import ScriptProcess

    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(_LINEAR.format(lr=3.0, kept="loss")))
    process = ScriptProcess(path)
    result = process.run()
    assert result.ok, result.error
    # (it comes after the result: the graph shows while the detectors run)
    assert result.problems is None and result.problems_pending.wait(60)
    report = result.problems_pending.report
    kinds = {p.kind for p in report.problems}
    assert {"diverging-loss", "graph-held"} <= kinds
    (held,) = _mine(report, "graph-held")
    assert result.graphs[held.graph].root == held.nodes[0]
    result.folder.release()


def test_a_malformed_report_in_the_result_is_a_message_not_a_crash(tmp_path):
    meta = result_schema.ResultMeta(
        ok=True, cancelled=False, error=None, trace_sent=False, trace_error=None, graphs=(),
        pass_labels=None, loss_label="loss", sampling=None, leaks=None, leak_error=None,
        exit_code=0, error_line=None, error_message=None, samples=None, samples_per_class=0,
        problems=P.ProblemReport([P.Problem("graph-held", "warning", "m", None)], ["graph-held"]),
    )  # fmt: skip
    result_schema.write_meta(meta, tmp_path)
    back = result_schema.read_meta(tmp_path)
    assert back.problems == meta.problems and back.problems_error is None
    data = json.loads((tmp_path / result_schema.RESULT_NAME).read_text())
    data["problems"]["problems"][0]["kind"] = "no-such-kind"
    (tmp_path / result_schema.RESULT_NAME).write_text(json.dumps(data))
    back = result_schema.read_meta(tmp_path)
    assert back.problems is None and "malformed" in back.problems_error


def test_graph_numbers_follow_the_graphs_the_app_lists():
    """A graph whose recording could not be sent is not listed: the problems of the graphs
    after it move up, and one of that graph keeps its message without the graph."""
    from viewer.model.scripts.process import _problems_of

    rows = tuple(
        result_schema.GraphRow(f"#{k}", 1, 0, k, k, 1.0, 0, segment)
        for k, segment in enumerate([result_schema.SEGMENT_NONE, result_schema.SEGMENT_LOST, 2, 3])
    )
    report = P.ProblemReport(
        [P.Problem("graph-held", "warning", "m", g, 1, (5,)) for g in (0, 1, 3)] +
        [P.Problem("diverging-loss", "warning", "d", None)]
    )  # fmt: skip
    meta = result_schema.ResultMeta(
        ok=True, cancelled=False, error=None, trace_sent=True, trace_error=None, graphs=rows,
        pass_labels=None, loss_label="loss", sampling=None, leaks=None, leak_error=None,
        exit_code=0, error_line=None, error_message=None, samples=None, samples_per_class=0,
        problems=report,
    )  # fmt: skip
    back = _problems_of(meta)
    assert [(p.graph, p.step, p.nodes) for p in back.problems] == [
        (0, 1, (5,)), (None, None, ()), (2, 1, (5,)), (None, None, ()),
    ]  # fmt: skip


# =============================================================================
# PyTorch: the same bugs in torch scripts
# =============================================================================
_TORCH = """
import torch

torch.manual_seed(0)
x = torch.linspace(-1, 1, 8).reshape(8, 1)
t = 3 * x + 1
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr={lr})
history = []
for i in range(15):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), t)
    loss.backward()
    opt.step()
    history.append({kept})
"""


@pytest.mark.parametrize(
    ("lr", "kept", "expected"),
    [
        (3.0, "loss.item()", {"diverging-loss"}),
        (0.1, "loss", {"graph-held"}),
        (0.1, "loss.item()", set()),
    ],
)
def test_torch_scripts_planted_and_correct(tmp_path, lr, kept, expected):
    pytest.importorskip("torch")
    result = _run_script(tmp_path, _TORCH.format(lr=lr, kept=kept))
    found = {p.kind for p in result.problems.problems if p.kind in RUN_KINDS}
    assert found == expected
    for p in result.problems.problems:
        if p.kind in RUN_KINDS and p.graph is not None:
            assert result.graphs[p.graph].root in p.nodes
        if p.kind == "graph-held":  # the holder named from the script's globals, as on the engine
            line = _line_of(_TORCH, "history.append")
            assert f"held by `history` (a list, line {line}: history.append(loss))" in p.message


_TORCH_FUNCTION = """
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return {factor} * x * gy


w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
for i in range(3):
    w.grad = None
    loss = Square.apply(w).sum()
    loss.backward()
"""


@pytest.mark.parametrize(("factor", "wrong"), [("1.0", True), ("2.0", False)])
def test_torch_custom_function_with_a_wrong_backward_is_named(tmp_path, factor, wrong):
    """torch.autograd.gradcheck's verdict on the program's own autograd.Function reaches the
    wrong-backward problem, naming the class; the right derivative (2x) stays silent."""
    pytest.importorskip("torch")
    result = _run_script(tmp_path, _TORCH_FUNCTION.format(factor=factor))
    found = [p for p in result.problems.problems if p.kind == "wrong-backward"]
    if wrong:
        (p,) = found
        assert p.severity == "error" and "Square" in p.message
    else:
        assert found == [] and "wrong-backward" in result.problems.ran


# =============================================================================
# No false alarms on the bundled examples
# =============================================================================
# demonstrations of a bug: wrong_backward and custom_function_gradcheck (its BadCube) show a
# wrong backward, the leaks folder graphs kept alive
_DEMOS = {"wrong_backward", "custom_function_gradcheck"}
_CORRECT = sorted(
    e.stem
    for e in list_examples()
    if e.kind == "script" and e.category != "leaks" and not demonstrates(e.stem, RUN_KINDS)
)


@pytest.mark.parametrize("stem", _CORRECT)
def test_a_correct_bundled_example_gets_nothing_above_info_from_the_run_detectors(stem):
    example = next(e for e in list_examples() if e.stem == stem)
    if example.missing:
        pytest.skip(f"{stem} needs {', '.join(example.missing)}")
    run = ScriptRun(example.path)
    run.sample_functions = 2
    result = run.run()
    assert result.ok, result.error
    loud = [
        p.line()
        for p in result.problems.above_info()
        if p.kind in RUN_KINDS or (p.kind == "nonfinite" and p.graph is None)
    ]
    assert loud == []


@pytest.mark.parametrize("stem", sorted(_DEMOS))
def test_the_wrong_backward_demonstrations_report_exactly_that(stem):
    example = next(e for e in list_examples() if e.stem == stem)
    run = ScriptRun(example.path)
    run.sample_functions = 2
    result = run.run()
    found = [p for p in result.problems.problems if p.kind in RUN_KINDS]
    assert [p.kind for p in found] == ["wrong-backward"]
    assert ("Softplus" if stem == "wrong_backward" else "BadCube") in found[0].message
