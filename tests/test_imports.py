"""The import direction of docs/ARCHITECTURE.md ("Layers"): the engine pulls in no Qt and (in
core) no networkx; viewer.model pulls in no Qt. Each check runs in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QT = ("PySide6", "pyqtgraph")


def _loaded_after(imports: list[str], watched: tuple[str, ...]) -> list[str]:
    code = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in imports)
        + f"print(sorted(m for m in {watched!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return eval(out.stdout)


def test_engine_core_imports_no_qt_and_no_networkx():
    assert _loaded_after(["autodiff", "autodiff.core"], (*QT, "networkx")) == []


@pytest.mark.parametrize("module", ["autodiff.trace", "viewer.model"])
def test_recorder_and_viewer_model_import_no_qt(module):
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} does not exist yet")
    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        found = None
    if found is None:
        pytest.skip(f"{module} does not exist yet")
    assert _loaded_after([module], QT) == []
