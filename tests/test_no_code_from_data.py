"""Nothing in the project turns data into code: no unpickling of what a file holds, no
``np.load(allow_pickle=True)``, no ``eval``/``exec`` of data. The only code the app runs is
code the user asked it to run (a script), and those places are listed here with why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("autodiff", "viewer")

# (file, what is called): why it is not data. Each entry must still be found (a stale
# exception would hide a new call in its place).
ALLOWED = {
    ("autodiff/leaks.py", "compile"): "run_script compiles the user's own script file",
    ("autodiff/leaks.py", "exec"): "and runs it, as python does",
    ("viewer/model/scripts/run.py", "runpy.run_path"): "a script the user chose to run",
}

# Calls that build objects from bytes: the module and the function.
UNPICKLERS = {
    ("pickle", "load"),
    ("pickle", "loads"),
    ("pickle", "Unpickler"),
    ("_pickle", "load"),
    ("_pickle", "loads"),
    ("cPickle", "load"),
    ("cPickle", "loads"),
    ("marshal", "load"),
    ("marshal", "loads"),
    ("shelve", "open"),
    ("dill", "load"),
    ("dill", "loads"),
    ("joblib", "load"),
    ("cloudpickle", "load"),
    ("cloudpickle", "loads"),
    ("pandas", "read_pickle"),
    ("pd", "read_pickle"),
    ("runpy", "run_path"),
    ("runpy", "run_module"),
}
CODE_BUILTINS = {"eval", "exec", "compile", "__import__"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def findings(source: str, filename: str) -> list[tuple[str, int, str]]:
    """(file, line, what) for every call that may run code from data."""
    found = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            # a restricted unpickler is allowed: it must decide what find_class returns
            bases = {_dotted(b) for b in node.bases}
            if bases & {"pickle.Unpickler", "Unpickler", "_pickle.Unpickler"}:
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                if "find_class" not in methods:
                    found.append((filename, node.lineno, f"{node.name} (no find_class)"))
            continue
        if isinstance(node, ast.ImportFrom) and node.module in {"pickle", "_pickle", "marshal"}:
            names = {a.name for a in node.names}
            if names & {"load", "loads"}:
                found.append((filename, node.lineno, f"from {node.module} import load"))
            continue
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        parts = name.split(".")
        if name in CODE_BUILTINS:
            found.append((filename, node.lineno, name))
        elif len(parts) >= 2 and (parts[-2], parts[-1]) in UNPICKLERS:
            found.append((filename, node.lineno, f"{parts[-2]}.{parts[-1]}"))
        elif parts[-1] == "load" and len(parts) >= 2 and parts[-2] in {"np", "numpy", "torch"}:
            pickle = _keyword(node, "allow_pickle")
            if parts[-2] == "torch":
                safe = _keyword(node, "weights_only")
                if not (isinstance(safe, ast.Constant) and safe.value is True):
                    found.append((filename, node.lineno, "torch.load without weights_only=True"))
            elif pickle is not None and not (
                isinstance(pickle, ast.Constant) and pickle.value is False
            ):
                found.append((filename, node.lineno, f"{name}(allow_pickle=...)"))
        elif parts[-1] == "load" and len(parts) >= 2 and parts[-2] == "yaml":
            loader = _dotted(_keyword(node, "Loader") or ast.Constant(None))
            if not loader.endswith("SafeLoader"):
                found.append((filename, node.lineno, "yaml.load without SafeLoader"))
    return found


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_no_code_is_made_from_data_anywhere_in_the_project():
    seen = set()
    unexpected = []
    for filename, source in _sources():
        for file, line, what in findings(source, filename):
            if (file, what) in ALLOWED:
                seen.add((file, what))
            else:
                unexpected.append(f"{file}:{line}: {what}")
    assert unexpected == []
    assert seen == set(ALLOWED), f"allowed but no longer found: {set(ALLOWED) - seen}"


@pytest.mark.parametrize(
    "snippet",
    [
        "import pickle\npickle.load(f)",
        "import pickle\npickle.loads(b)",
        "import pickle\npickle.Unpickler(f).load()",
        "from pickle import load",
        "import numpy as np\nnp.load(p, allow_pickle=True)",
        "import numpy\nnumpy.load(p, allow_pickle=flag)",
        "eval(text)",
        "exec(text)",
        "compile(text, 'f', 'eval')",
        "__import__(name)",
        "import marshal\nmarshal.loads(b)",
        "import torch\ntorch.load(p)",
        "import yaml\nyaml.load(s)",
        "import pickle\nclass Open(pickle.Unpickler):\n    pass",
    ],
)
def test_the_scan_finds_each_way_of_making_code_from_data(snippet):
    assert findings(snippet, "x.py"), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "import numpy as np\nnp.load(p, allow_pickle=False)",
        "import numpy as np\nnp.load(p)",  # numpy's default refuses pickles
        "import ast\nast.literal_eval(text)",
        "import torch\ntorch.load(p, weights_only=True)",
        "import pickle\nclass Only(pickle.Unpickler):\n    def find_class(self, m, n):\n"
        "        raise ValueError(n)\nOnly(f).load()",
        "app.exec()",
    ],
)
def test_the_scan_lets_data_only_reads_pass(snippet):
    assert findings(snippet, "x.py") == [], snippet
