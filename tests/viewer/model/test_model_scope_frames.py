"""Open modules: ``Document.expand`` of a scope inside a folded run opens it in one call and
``collapse`` closes it; each open scope is framed in the scene, titled with its name and
class, around its nodes, nested frames inside their parent's; the status says what changed."""

import numpy as np
import pytest
from scoped_nets import Net

import autodiff.functions as F
from autodiff.trace import record
from viewer.model.document.document import Document

TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture(scope="module")
def residual_result():
    result = Document().load_example("residual_mlp").run()
    assert result.ok, result.error
    return result


@pytest.fixture
def residual(residual_result):
    doc = Document()
    assert doc.apply_script_result(residual_result)
    return doc


@pytest.fixture
def net_doc():
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((5, 2)), rng.standard_normal((5, 1))
    with record() as trace:
        F.mean_squared_error(Net()(x), t).backward()
    doc = Document()
    doc.load_graph(trace, "net", "trace")
    return doc


def modules(scene):
    return {scene.names[i]: i for i, k in enumerate(scene.kinds) if k == "module"}


def shown_functions_in(doc, path):
    """The scopes of the Functions the scene shows as themselves, under ``path``."""
    scene = doc.scene
    scopes = [
        doc.trace.node(int(scene.node_ids[i]))["scope"]
        for i in range(scene.n_nodes)
        if scene.kinds[i] == "function"
    ]
    return [s for s in scopes if s == path or s.startswith(path + "/")]


def test_expand_opens_a_scope_inside_a_folded_run_in_one_call(residual):
    doc = residual
    said = []
    doc.status_changed.connect(said.append)
    assert f"Block {TIMES} 6" in modules(doc.scene)  # the folded start
    assert shown_functions_in(doc, "ResidualMLP/b2") == []
    assert doc.expand("ResidualMLP/b2")
    assert shown_functions_in(doc, "ResidualMLP/b2")  # b2's own nodes, in one call
    assert shown_functions_in(doc, "ResidualMLP/b2/fc1")
    boxes = modules(doc.scene)
    assert "b2" not in boxes and {"b0", "b1", "b3", "b4", "b5"} <= set(boxes)
    assert said[-1].startswith(f"Unfolded the run Block {TIMES} 6 and expanded ResidualMLP/b2: ")
    assert not doc.expand("ResidualMLP/b2")  # open already: nothing to do
    assert doc.collapse("ResidualMLP/b2")
    assert shown_functions_in(doc, "ResidualMLP/b2") == []
    assert "b2" in modules(doc.scene)
    assert said[-1].startswith("Collapsed ResidualMLP/b2: ")
    assert not doc.collapse("ResidualMLP/b2")  # a box already
    assert doc.expand("ResidualMLP/b2")  # and open again, the run unfolded already
    assert said[-1].startswith("Expanded ResidualMLP/b2: ")
    assert shown_functions_in(doc, "ResidualMLP/b2/fc2")


def test_expand_opens_every_box_above_the_scope(net_doc):
    doc = net_doc
    doc.set_depth(0)
    assert list(modules(doc.scene)) == ["Net"]
    assert doc.expand("Net/b1/fc2")
    assert shown_functions_in(doc, "Net/b1/fc2")
    assert {"inp", "b0", "b2", "b3", "out", "fc1"} <= set(modules(doc.scene))


def test_unfolding_a_run_says_so_by_the_runs_name(residual):
    doc = residual
    said = []
    doc.status_changed.connect(said.append)
    assert doc.unfold("ResidualMLP/b0")
    assert said[-1].startswith(f"Unfolded the run Block {TIMES} 6: ")
    assert {"b0", "b5"} <= set(modules(doc.scene))
    assert doc.fold("ResidualMLP/b3")
    assert said[-1].startswith(f"Folded the run Block {TIMES} 6: ")
