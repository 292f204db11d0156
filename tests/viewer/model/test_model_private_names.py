"""No viewer module imports a private name (``_x``, or any name of a ``_module``) from another
folder: what a folder offers the others is its modules' public API."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _private_imports(path: Path) -> list[str]:
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    folder = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.module.split(".")[0] not in ("viewer", "autodiff"):
            continue
        if node.module.rsplit(".", 1)[0] == folder:
            continue  # a module of the same folder
        private_module = any(part.startswith("_") for part in node.module.split("."))
        for alias in node.names:
            if private_module or alias.name.startswith("_"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{alias.name}")
    return found


def test_no_viewer_module_imports_a_private_name_of_another_folder():
    found = [hit for p in sorted((ROOT / "viewer").rglob("*.py")) for hit in _private_imports(p)]
    assert found == []
