"""``--check`` over every bundled example, end to end (viewer.check.run_check, what
``python -m viewer --check FILE --yes --json`` runs, with the script in its worker process):
each example meant to be correct exits 0 with nothing above info, each demonstration reports
exactly its bug (tests/bug_demos.py says which), a planted bug seen in every pass is one line,
and the seed's training loop, on the engine and in PyTorch, is silent."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from bug_demos import CYCLES, DEMONSTRATIONS

from viewer.check import EXIT_CLEAN, EXIT_FOUND, check_path, run_check
from viewer.model.checks.problems import Problem, problem_from_json
from viewer.model.document.examples import list_examples

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = list_examples()


def _params(examples, slow_scripts: bool = False):
    """Each example a test; a script among the slow tests with ``slow_scripts`` (each runs
    in a worker process: a second or more)."""
    return [
        pytest.param(
            e,
            id=e.stem,
            marks=[pytest.mark.slow] * (e.kind == "script" and slow_scripts)
            + [pytest.mark.skipif(bool(e.missing), reason=f"needs {', '.join(e.missing)}")],
        )
        for e in examples
    ]


def _check(path: Path) -> tuple[int, list[Problem]]:
    """``--check PATH --yes --json``: the exit status and the problems printed."""
    out, err = io.StringIO(), io.StringIO()
    status = run_check(str(path), run_scripts=True, as_json=True, out=out, err=err)
    printed = json.loads(out.getvalue())
    return status, [problem_from_json(p) for p in printed]


def _loud(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity != "info"]


def test_every_demonstration_is_a_bundled_example():
    stems = {e.stem for e in EXAMPLES}
    assert set(DEMONSTRATIONS) <= stems and set(CYCLES) <= stems
    debugging = {e.stem for e in EXAMPLES if e.category == "debugging"}
    planted = {"forgot_cleargrads", "broadcast_loss", "dead_relu", "history_append"}
    assert planted | {"diverging_lr", "wrong_backward", "nan_log"} <= debugging
    assert "right_backward" in debugging and "right_backward" not in DEMONSTRATIONS


CORRECT = [e for e in EXAMPLES if e.stem not in DEMONSTRATIONS]


# (the correct scripts: slow tests, as the detectors' own fast tests run them in this process)
@pytest.mark.parametrize("example", _params(CORRECT, slow_scripts=True))
def test_an_example_meant_to_be_correct_exits_0_with_nothing_above_info(example):
    status, problems = _check(example.path)
    assert [p.line() for p in _loud(problems)] == []
    assert status == EXIT_CLEAN
    if example.stem in CYCLES:  # a graph kept by a reference cycle: said, as info
        assert [p.kind for p in problems] == ["graph-held"]
        assert "reference cycle" in problems[0].message


# each demonstration: the words its one problem must hold (the culprit, where it shows)
_NAMED = {
    "wrong_backward": ["Softplus"],
    "custom_function_gradcheck": ["BadCube"],
    "nan_log": ["Log"],
    "closure": ["debug_hooks"],
    "global_list": ["debug_cache"],
    "forgot_cleargrads": [
        "l0.W",
        "l1.b",
        "cleargrads()",
        "(in 7 of 8 kept passes, first in pass #2)",
    ],
    "broadcast_loss": ["(50, 1)", "(50,)", "reshape"],
    "dead_relu": ["ReLU", "80%", "(in 5 of 5 kept passes, first in pass #1)"],
    "history_append": ["held by `history` (a list, line 28: history.append(loss))", "pass #1"],
    "diverging_lr": ["learning rate", "pass #1"],
}


@pytest.mark.parametrize("example", _params([e for e in EXAMPLES if e.stem in DEMONSTRATIONS]))
def test_a_demonstration_reports_exactly_its_bug_once(example):
    status, problems = _check(example.path)
    loud = _loud(problems)
    assert [p.kind for p in loud] == list(DEMONSTRATIONS[example.stem]), [p.line() for p in loud]
    assert status == EXIT_FOUND
    for word in _NAMED[example.stem]:
        assert word in loud[0].message, (word, loud[0].message)


def test_a_bug_in_every_pass_is_one_line_and_each_graph_keeps_its_own():
    """forgot_cleargrads: carried gradients in passes 2 to 8 are one problem, pass 2's; each
    of those graphs keeps its own, with its own nodes, through the worker's result file."""
    outcome = check_path(ROOT / "resources/examples/forgot_cleargrads.py", run_scripts=True)
    report = outcome.report
    (carried,) = [p for p in report.problems if p.kind == "carried-gradient"]
    assert carried.graph == 1 and carried.nodes
    own = {k: [p for p in report.for_graph(k) if p.kind == "carried-gradient"] for k in range(8)}
    assert own[0] == []
    assert all(len(own[k]) == 1 for k in range(1, 8))
    assert own[1][0].nodes == carried.nodes and own[1][0].step == carried.step
    assert "kept passes" not in own[1][0].message
    assert all(own[k][0].graph == k for k in range(1, 8))
    assert report.summary().startswith("1 warning:")


def test_the_command_prints_the_grouped_line_alone():
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    env.pop("DISPLAY", None)
    script = "resources/examples/forgot_cleargrads.py"
    done = subprocess.run(
        [sys.executable, "-m", "viewer", "--check", script, "--yes"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == EXIT_FOUND, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("carried-gradient warning: ")
    assert lines[0].endswith("(in 7 of 8 kept passes, first in pass #2) [graph 1, step 6]")


# =============================================================================
# The seed's training loop: silent on both engines
# =============================================================================
_SEED_LOOP = """
import autodiff.functions as F
from autodiff import datasets, models, optimizers

x, y = datasets.get_sine()
model = models.MLP((10, 1))
optimizer = optimizers.SGD(0.2).setup(model)
for i in range(100):
    y_pred = model(x)
    loss = F.mean_squared_error(y, y_pred)
    model.cleargrads()
    loss.backward()
    optimizer.update()
    if i % 25 == 0:
        print(i, float(loss.data))
"""

_TORCH_LOOP = """
import math
import torch
from torch import nn

torch.manual_seed(0)
x = torch.rand(100, 1)
y = torch.sin(2 * math.pi * x) + torch.rand(100, 1)
model = nn.Sequential(nn.Linear(1, 10), nn.Sigmoid(), nn.Linear(10, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
for i in range(40):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    if i % 10 == 0:
        print(i, loss.item())
"""


@pytest.mark.parametrize(
    "program",
    [
        pytest.param(_SEED_LOOP, id="autodiff"),
        pytest.param(_TORCH_LOOP, id="torch", marks=pytest.mark.slow),
    ],
)
def test_the_seed_training_loop_reports_nothing_above_info(tmp_path, program):
    if "torch" in program:
        pytest.importorskip("torch")
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(program))
    status, problems = _check(path)
    assert [p.line() for p in _loud(problems)] == []
    assert status == EXIT_CLEAN
    # the twin with the classic line left out is caught: the check looked
    if "torch" in program:
        path.write_text(textwrap.dedent(program).replace("optimizer.zero_grad()", "pass"))
    else:
        path.write_text(textwrap.dedent(program).replace("model.cleargrads()", "pass"))
    status, problems = _check(path)
    assert "carried-gradient" in {p.kind for p in _loud(problems)} and status == EXIT_FOUND


def test_a_grouped_problem_names_its_first_pass_by_the_runs_number_not_the_graphs(tmp_path):
    """A long run keeps a sample of its passes: the graph list's index is not the pass's
    number. cleargrads() stops at pass 60: the carried gradients are one problem, first in
    the first kept pass after it, named by its number in the run."""
    from viewer.model.scripts.run import ScriptRun

    path = tmp_path / "train.py"
    path.write_text(
        textwrap.dedent(_SEED_LOOP)
        .replace("range(100)", "range(150)")
        .replace("    model.cleargrads()", "    if i < 60:\n        model.cleargrads()")
    )
    run = ScriptRun(path)
    run.max_passes = 12
    result = run.run()
    assert result.ok, result.error
    report = result.problems
    assert report.graphs_total == len(result.graphs) < 150
    (carried,) = [p for p in report.problems if p.kind == "carried-gradient"]
    first = result.graphs[carried.graph].number + 1  # the pass's number in the run
    assert first > 60 and first != carried.graph + 1
    assert f"first in pass #{first})" in carried.message
    shown = [k for k in range(len(result.graphs)) if report.for_graph(k)]
    looked = report.graphs
    assert f"(in {len(shown)} of {looked} kept passes" in carried.message
