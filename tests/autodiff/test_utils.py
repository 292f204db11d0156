"""autodiff.utils: gradient checks, numerical gradients, shape helpers, DOT export."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Function, Variable, utils


class _WrongSquare(Function):
    """x^2 with a wrong derivative (x instead of 2x), to see gradient_check fail."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        return gy * self.inputs[0]


class _WrongSecondInput(Function):
    """x0 * x1 whose derivative is right for x0 and wrong (zero) for x1."""

    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        return gy * self.inputs[1], gy * 0.0


def test_gradient_check_passes_for_a_correct_backward():
    assert utils.gradient_check(F.sin, np.random.default_rng(0).standard_normal((2, 3)))


def test_gradient_check_fails_and_prints_a_readable_report(capsys):
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    assert utils.gradient_check(lambda v: _WrongSquare()(v), x) is False
    report = capsys.readouterr().out
    assert "gradient_check: input 0 (shape (2, 2)): 4 of 4 elements disagree" in report
    lines = report.splitlines()
    assert lines[1].split() == ["index", "x", "backprop", "numerical", "abs", "error"]
    first = lines[2].split()
    assert first[:2] == ["(0,", "0)"]
    assert float(first[3]) == pytest.approx(1.0)  # backprop gave x
    assert float(first[4]) == pytest.approx(2.0)  # the truth is 2x


def test_gradient_check_checks_every_input_not_only_the_first(capsys):
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert utils.gradient_check(lambda x0, x1: _WrongSecondInput()(x0, x1), a, b) is False
    report = capsys.readouterr().out
    assert "input 1 (shape (2,))" in report
    assert "input 0" not in report


def test_gradient_check_is_quiet_when_asked(capsys):
    assert utils.gradient_check(lambda v: _WrongSquare()(v), np.ones(2), verbose=False) is False
    assert capsys.readouterr().out == ""


def test_gradient_check_reports_a_missing_gradient_as_zeros(capsys):
    # x1 takes no part in the output: its gradient is None, and numerically zero: agrees
    assert utils.gradient_check(lambda x0, x1: x0 * 2.0, np.ones(2), np.ones(3))


def test_gradient_check_works_in_float64_for_float32_inputs():
    assert utils.gradient_check(F.tanh, np.linspace(-1, 1, 5).astype(np.float32))


def test_numerical_grad_leaves_the_input_untouched():
    data = np.array([1.0, 2.0], dtype=np.float32)
    x = Variable(data)
    grad = utils.numerical_grad(lambda v: v * v, x)
    assert x.data is data
    assert x.data.dtype == np.float32
    np.testing.assert_allclose(grad, [2.0, 4.0], rtol=1e-6)


def test_numerical_grad_of_a_0d_input():
    g = utils.numerical_grad(F.exp, np.array(0.0))
    assert g.shape == ()
    assert g == pytest.approx(1.0)


def test_sum_to_and_its_errors():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(utils.sum_to(x, (3, 1)), x.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(utils.sum_to(x, (4,)), x.sum(axis=(0, 1)))
    np.testing.assert_array_equal(utils.sum_to(x, ()), x.sum())
    with pytest.raises(ValueError, match=r"sum_to: cannot sum an array of shape \(2, 3, 4\)"):
        utils.sum_to(x, (5, 3, 4, 1))
    with pytest.raises(ValueError, match=r"sum_to: cannot sum an array of shape \(2, 3, 4\)"):
        utils.sum_to(x, (2, 5))


def test_reshape_sum_backward_restores_the_reduced_axes():
    gy = np.ones((2, 4))
    assert utils.reshape_sum_backward(gy, (2, 3, 4), 1, False).shape == (2, 1, 4)
    assert utils.reshape_sum_backward(gy, (2, 3, 4), -2, False).shape == (2, 1, 4)
    assert utils.reshape_sum_backward(np.ones(3), (2, 3, 4), (0, 2), False).shape == (1, 3, 1)
    assert utils.reshape_sum_backward(np.ones(3), (2, 3, 4), [0, 2], False).shape == (1, 3, 1)
    assert utils.reshape_sum_backward(np.array(1.0), (2, 3), None, False).shape == ()


def test_logsumexp_is_stable():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1000.0]])
    np.testing.assert_allclose(utils.logsumexp(x, 1)[:, 0], [1000 + np.log(2), -1000 + np.log(2)])


def test_max_backward_shape_handles_negative_axes():
    x = np.ones((2, 3, 4))
    assert utils.max_backward_shape(x, -1) == [2, 3, 1]
    assert utils.max_backward_shape(x, (0, -2)) == [1, 1, 4]
    assert utils.max_backward_shape(x, None) == [1, 1, 1]


# =============================================================================
# DOT
# =============================================================================
def test_get_dot_graph_content():
    x = Variable(np.ones((2, 3)), name="x")
    w = Variable(np.ones(3), name='w"q')
    y = F.sum(F.exp(x) * w)
    y.name = "y"
    dot = utils.get_dot_graph(y)
    assert dot.startswith("digraph g {\n")
    assert dot.endswith("}")
    assert f'{id(x)} [label="x: (2, 3) float64", color=orange, style=filled]' in dot
    assert f'{id(y)} [label="y: () float64", color=orange, style=filled]' in dot
    assert 'label="w\\"q: (3,) float64"' in dot  # quotes in names are escaped
    for f in ("Exp", "Mul", "Sum"):
        assert f'[label="{f}", color=lightblue, style=filled, shape=box]' in dot
    exp = y.creator.inputs[0].creator.inputs[0].creator
    assert f"{id(x)} -> {id(exp)}" in dot
    assert f"{id(y.creator)} -> {id(y)}" in dot
    assert 'label="y"' in utils.get_dot_graph(y, verbose=False)


# plot_dot_graph without Graphviz: autodiff-viewer's export, in a child process
def _no_graphviz(monkeypatch, tmp_path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("dot") is None


def _book_graph() -> Variable:
    x = Variable(np.ones((2, 3)), name="x")
    w = Variable(np.ones((3, 1), dtype=np.float32), name="w")
    y = F.matmul(x, w)
    y.name = "y"
    return F.sum(y)


def test_plot_dot_graph_without_graphviz_draws_png_svg_and_pdf(monkeypatch, tmp_path):
    _no_graphviz(monkeypatch, tmp_path)
    z = _book_graph()
    z.name = "z"
    x = z.creator.inputs[0].creator.inputs[0]
    x.grad = Variable(np.full((2, 3), 7.0))  # what the program holds is left as it is
    for name in ("g.png", "g.svg", "g.pdf"):
        utils.plot_dot_graph(z, verbose=False, to_file=str(tmp_path / name))
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-"
    texts = _svg_texts(tmp_path / "g.svg")
    for label in ("x", "w", "y", "z", "MatMul", "Sum"):
        assert label in texts
    assert not any("float64" in t for t in texts)
    np.testing.assert_array_equal(x.grad.data, np.full((2, 3), 7.0))
    assert z.grad is None


def _svg_texts(path) -> list[str]:
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    return [t.strip() for e in root.iter() if e.tag.endswith("text") for t in e.itertext()]


def test_plot_dot_graph_verbose_labels_give_shapes_and_dtypes(monkeypatch, tmp_path):
    _no_graphviz(monkeypatch, tmp_path)
    utils.plot_dot_graph(_book_graph(), to_file=str(tmp_path / "g.svg"))
    texts = _svg_texts(tmp_path / "g.svg")
    assert "x: (2, 3) float64" in texts
    assert "w: (3, 1) float32" in texts
    assert "() float64" in texts  # the unnamed sum, as DeZero labels it


def test_plot_dot_graph_without_graphviz_refuses_another_suffix(monkeypatch, tmp_path):
    _no_graphviz(monkeypatch, tmp_path)
    wanted = r"g\.jpg'.*end in \.png, \.svg or \.pdf.*install Graphviz"
    with pytest.raises(ValueError, match=wanted):
        utils.plot_dot_graph(_book_graph(), to_file=str(tmp_path / "g.jpg"))
    assert not (tmp_path / "g.jpg").exists()


def test_plot_dot_graph_without_graphviz_or_qt_says_what_is_missing(monkeypatch, tmp_path):
    import importlib.util

    _no_graphviz(monkeypatch, tmp_path)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "PySide6" else find_spec(name)
    )
    with pytest.raises(RuntimeError, match=r"'dot' is not on PATH and PySide6 is not installed"):
        utils.plot_dot_graph(_book_graph(), to_file=str(tmp_path / "g.png"))
    assert not (tmp_path / "g.png").exists()


def test_plot_dot_graph_reports_a_failed_drawing(monkeypatch, tmp_path):
    _no_graphviz(monkeypatch, tmp_path)
    missing = tmp_path / "no such folder" / "g.png"
    with pytest.raises(RuntimeError, match=r"drawing .*g\.png' failed: .*does not exist"):
        utils.plot_dot_graph(_book_graph(), to_file=str(missing))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_plot_dot_graph_writes_the_file(tmp_path):
    x = Variable(np.array(1.0))
    out = tmp_path / "g.svg"
    utils.plot_dot_graph(F.exp(x), to_file=str(out))
    assert out.read_text().lstrip().startswith("<?xml")
