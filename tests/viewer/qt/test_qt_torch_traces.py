"""A torch recording in the window's parts: the inspector panel shows torch's node, its aten op,
its saved shapes and its module; a saved torch trace exports headless (PNG and SVG)."""

import pytest

torch = pytest.importorskip("torch")

from autodiff.trace import pytorch  # noqa: E402
from viewer.app import main  # noqa: E402
from viewer.model.panels.inspector import inspect  # noqa: E402
from viewer.qt.panels.inspector import InspectorPanel  # noqa: E402


@pytest.fixture(scope="module")
def mlp_trace():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x = torch.randn(5, 3)
    with pytorch.record() as t:
        net(x).pow(2).mean().backward()
    return t, {name: p.grad.clone() for name, p in net.named_parameters()}


def _rows(panel: InspectorPanel) -> dict[str, str]:
    return {
        panel.fields.item(r, 0).text(): panel.fields.item(r, 1).text()
        for r in range(panel.fields.rowCount())
    }


def test_the_inspector_panel_shows_torchs_rows(qtbot, mlp_trace):
    t, grads = mlp_trace
    panel = InspectorPanel()
    qtbot.addWidget(panel)
    linear = next(
        f
        for f in t.functions
        if t.node(f)["scope"] == "Sequential/2" and t.node(f)["op"] == "linear"
    )
    panel.show_node(inspect(t, linear, len(t.steps) - 1))
    rows = _rows(panel)
    assert rows["torch node"] == "AddmmBackward0"
    assert rows["aten op"] == "aten.addmm.default"
    assert rows["saved mat1"] == "(5, 4)"
    assert rows["module"] == "Sequential/2"
    bias = next(p for p in t.parameters() if t.node(p)["name"] == "0.bias")
    panel.show_node(inspect(t, bias, len(t.steps) - 1))
    rows = _rows(panel)
    assert rows["parameter"] == "0.bias"
    shown = [float(v) for v in panel.grad_box.toPlainText().strip("[] \n").split(",")]
    assert shown == pytest.approx(grads["0.bias"].tolist(), rel=1e-5, abs=1e-6)


def test_a_saved_torch_trace_exports_headless(qapp, tmp_path, capsys, mlp_trace):
    path = tmp_path / "mlp.json"
    mlp_trace[0].to_json(path)
    png, svg = tmp_path / "mlp.png", tmp_path / "mlp.svg"
    assert main(["--export", str(png), "--phase", "backward", str(path)]) == 0
    assert main(["--export", str(svg), "--step", "3", str(path)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    text = svg.read_text()
    assert "<svg" in text and "linear" in text and "tanh" in text
