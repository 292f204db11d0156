"""The import direction of docs/ARCHITECTURE.md ("Layers"): the engine pulls in no Qt and (in
core) no networkx; viewer.model pulls in no Qt. Each check runs in a fresh interpreter."""

from __future__ import annotations

import ast
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
    assert importlib.util.find_spec(module) is not None, f"{module} is missing"
    assert _loaded_after([module], QT) == []


def test_the_script_worker_starts_without_the_document_or_networkx():
    """What the worker imports before a script runs (viewer.model.scripts.worker's main) pulls
    in neither the Document and its layout, nor networkx: every run pays for its start."""
    worker = [
        "autodiff.trace.formats.npz",
        "viewer.model.scripts.result_schema",
        "viewer.model.checks.problems",
        "viewer.model.scripts.pass_recording",
        "viewer.model.scripts.run",
        "viewer.model.scripts.worker",
    ]
    watched = ("networkx", "viewer.model.document.document", "viewer.model.layout.compute")
    assert _loaded_after(worker, watched) == []


def test_viewer_model_names_its_exports_when_asked():
    """viewer.model's names are imported when first asked for, and all of them exist."""
    code = (
        "import sys, viewer.model as m\n"
        "assert 'viewer.model.document.document' not in sys.modules\n"
        "assert m.Document.__name__ == 'Document'\n"
        "assert all(getattr(m, n) is not None for n in m.__all__)\n"
        "assert set(m.__all__) <= set(dir(m))\n"
        "try:\n    m.NoSuchName\nexcept AttributeError:\n    print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "ok"


# ----------------------------------------------------------------------------- import circles
def _product_modules() -> dict[str, Path]:
    modules = {}
    for package in ("autodiff", "viewer"):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _skipped(tree: ast.Module, count_type_checking: bool = False) -> set[int]:
    """Nodes inside ``if TYPE_CHECKING:`` (types only, unless ``count_type_checking``) and
    ``if __name__ == "__main__":`` (run as a script, the module is ``__main__``): neither
    imports anything when imported."""
    skipped: set[int] = set()
    typing_only = () if count_type_checking else ("TYPE_CHECKING", "typing.TYPE_CHECKING")
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        test = ast.unparse(node.test)
        if test in typing_only or "__name__ ==" in test:
            skipped.update(id(n) for n in ast.walk(node))
    return skipped


def _import_graph(count_type_checking: bool = False) -> dict[str, set[str]]:
    """module -> the product modules it imports, at the top or inside a function (and under
    ``if TYPE_CHECKING:`` with ``count_type_checking``)."""
    modules = _product_modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _skipped(tree, count_type_checking)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                # ``from package import submodule`` imports the submodule
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                found = known(target)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_beyond_the_engines_core():
    # docs/ARCHITECTURE.md: core and functions import each other (Variable's operators call
    # functions lazily, functions' primitives subclass core's Function), and functions
    # re-exports functions_conv at its end, as DeZero's does (whose primitives subclass core's
    # Function too); nothing else may, not even through an import inside a function
    engine = {"autodiff.core", "autodiff.functions", "autodiff.functions_conv"}
    circles = _circles(_import_graph())
    assert [sorted(c) for c in circles if c != engine] == []


def test_the_circle_check_finds_a_lazy_import_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [{"a", "b", "c"}]


# ----------------------------------------------------------------------------- the folders
MAX_MODULES_PER_FOLDER = 15


def test_no_folder_of_the_viewer_holds_more_than_15_modules():
    """docs/ARCHITECTURE.md: packages named for what they hold, none a flat room."""
    crowded = {}
    for folder in [ROOT / "viewer", *(p for p in (ROOT / "viewer").rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[folder.relative_to(ROOT).as_posix()] = len(modules)
    assert crowded == {}


def test_no_import_circle_in_viewer_model_not_even_for_annotations():
    circles = _circles(_import_graph(count_type_checking=True))
    assert [sorted(c) for c in circles if any(m.startswith("viewer.model") for m in c)] == []


def test_at_most_two_annotation_circles_in_the_product():
    engine = {"autodiff.core", "autodiff.functions", "autodiff.functions_conv"}
    circles = [c for c in _circles(_import_graph(count_type_checking=True)) if c != engine]
    assert len(circles) <= 2, [sorted(c) for c in circles]
