"""The training examples in resources/examples: each runs and reaches its stated result."""

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"
NAMES = [
    "calculator",
    "linear_regression",
    "sine_regression",
    "spiral",
    "custom_function_gradcheck",
]


def load(name):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_example_is_a_standalone_program(name):
    source = (EXAMPLES / f"{name}.py").read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree)
    assert doc, f"{name}: no module docstring"
    title, blank, *rest = doc.splitlines()
    assert title and len(title) < 80 and not blank and rest, f"{name}: title line, blank, text"
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported <= {"autodiff", "numpy"}, f"{name} imports {imported}"
    assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
    assert 'if __name__ == "__main__":\n    main()' in source


def test_calculator_gives_the_articles_gradients(capsys):
    results = load("calculator").main()
    assert results["L"] == 20.0
    assert results["dL/da"] == -15.0
    assert results["dL/db"] == 10.0
    assert results["dL/dc"] == 5.0
    assert results["dL/df"] == 4.0
    assert results["dL/dd"] == 5.0
    assert results["dL/de"] == 5.0
    out = capsys.readouterr().out
    for line in ("dL/da = -15", "dL/db = 10", "dL/dc = 5", "dL/df = 4"):
        assert line in out


def test_calculator_runs_as_a_script():
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "calculator.py")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert "dL/da = -15" in done.stdout


def test_linear_regression_ends_near_w2_b1(capsys):
    results = load("linear_regression").main()
    assert results["w"] == pytest.approx(2.0, abs=0.05)
    assert results["b"] == pytest.approx(1.0, abs=0.05)
    assert results["loss"] < 0.011  # the noise's variance is 0.01
    assert "fitted y = " in capsys.readouterr().out


def test_sine_regression_prints_the_books_numbers(capsys):
    results = load("sine_regression").main(iters=1001)
    # Step 45 of the book prints these losses at iterations 0 and 1000 (the same data, the
    # same initial weights; the tolerance leaves the engine free to reorder float operations).
    assert results["first_loss"] == pytest.approx(0.8165178492839196, rel=1e-6)
    assert results["loss"] == pytest.approx(0.24990280802148895, rel=1e-6)
    assert "iter  1000  loss 0.24990" in capsys.readouterr().out


@pytest.mark.slow
def test_sine_regression_fits_the_curve_with_its_full_settings(capsys):
    results = load("sine_regression").main()
    assert results["loss"] < 0.08
    assert "iter  9999" in capsys.readouterr().out


def test_spiral_reaches_95_percent_with_its_full_settings(capsys):
    results = load("spiral").main()
    assert results["accuracy"] >= 0.95
    assert results["loss"] < results["first_loss"] / 5
    out = capsys.readouterr().out
    assert f"training accuracy: {results['accuracy']:.1%}" in out


def test_spiral_with_few_epochs_is_quick_and_learning(capsys):
    results = load("spiral").main(epochs=3)
    assert results["epochs"] == 3
    assert np.isfinite(results["loss"])
    assert results["loss"] < results["first_loss"]


def test_gradient_check_passes_the_right_backward_and_reports_the_wrong_one(capsys):
    results = load("custom_function_gradcheck").main()
    assert results == {"cube_passes": True, "bad_cube_passes": False}
    out = capsys.readouterr().out
    assert "6 of 6 elements disagree" in out
    assert "backprop" in out and "numerical" in out
