"""The example library: every ``*.expr`` and ``*.py`` below ``resources/examples/``.

An example's title is the first line of its docstring (scripts) or of its leading ``#``
comment block (expressions); the rest of that paragraph is its description. Its category is,
in order: a ``Category: name`` line in that header, the sub-folder it lives in
(``examples/leaks/global_list.py`` -> ``leaks``), ``training`` for a script that loops over
backward, else ``basics``. A ``Requires: torch`` line names the packages it needs beyond the
app's own (:attr:`Example.missing` says which are not installed, without importing them).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from viewer.model import assets

__all__ = ["Example", "find_example", "list_examples", "read_example"]

_FOLDER = "examples"
_KINDS = {".expr": "expression", ".py": "script"}
_CATEGORY_LINE = re.compile(r"^\s*category\s*:\s*([\w-]+)\s*$", re.IGNORECASE | re.MULTILINE)
_REQUIRES_LINE = re.compile(r"^\s*requires\s*:\s*([\w., -]+?)\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Example:
    name: str  # resource name, e.g. "examples/diamond.expr"
    title: str
    description: str
    kind: str  # 'expression' | 'script'
    category: str
    path: Path
    requires: tuple[str, ...] = ()  # packages it needs beyond the app's own ("torch")

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def missing(self) -> tuple[str, ...]:
        """The packages of ``requires`` that are not installed (found, never imported)."""
        return tuple(name for name in self.requires if importlib.util.find_spec(name) is None)

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")


def list_examples() -> list[Example]:
    """All bundled examples, sorted by category then title."""
    found = []
    for name in assets.names(_FOLDER + "/"):
        suffix = Path(name).suffix
        if suffix in _KINDS:
            found.append(_describe(name, _KINDS[suffix]))
    return sorted(found, key=lambda e: (_category_rank(e.category), e.category, e.title.lower()))


def find_example(key: str) -> Example:
    """An example by resource name, file name or stem (``"diamond"``); ValueError if unknown."""
    examples = list_examples()
    for example in examples:
        if key in (example.name, example.path.name, example.stem):
            return example
    known = ", ".join(e.stem for e in examples)
    raise ValueError(f"unknown example {key!r}; known examples: {known}")


def read_example(key: str) -> str:
    return find_example(key).read()


def _category_rank(category: str) -> int:
    order = ("basics", "higher-order", "training", "debugging", "leaks")
    return order.index(category) if category in order else len(order)


def _describe(name: str, kind: str) -> Example:
    path = assets.path(name)
    text = path.read_text(encoding="utf-8")
    header = _script_header(text) if kind == "script" else _comment_header(text)
    match = _CATEGORY_LINE.search(header)
    header = _CATEGORY_LINE.sub("", header)
    needs = _REQUIRES_LINE.search(header)
    header = _REQUIRES_LINE.sub("", header)
    requires = tuple(n for n in re.split(r"[\s,]+", needs.group(1)) if n) if needs else ()
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", header.strip()) if p.strip()]
    first = paragraphs[0] if paragraphs else ""
    title_line, _, rest = first.partition("\n")
    title = title_line.strip().rstrip(".") or path.stem.replace("_", " ")
    description = " ".join(rest.split())
    if not description and len(paragraphs) > 1:
        description = " ".join(paragraphs[1].split())
    if match:
        category = match.group(1).lower()
    else:
        parts = name.split("/")
        if len(parts) > 2:
            category = parts[1]
        elif kind == "script" and _loops_over_backward(text):
            category = "training"
        else:
            category = "basics"
    return Example(name, title, description, kind, category, path, requires)


def _loops_over_backward(text: str) -> bool:
    """Whether a for/while loop calls ``.backward(...)``: a training loop."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return False
    for loop in ast.walk(module):
        if isinstance(loop, ast.For | ast.While):
            for node in ast.walk(loop):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "backward"
                ):
                    return True
    return False


def _script_header(text: str) -> str:
    try:
        module = ast.parse(text)
    except SyntaxError:
        return _comment_header(text)
    return ast.get_docstring(module) or _comment_header(text)


def _comment_header(text: str) -> str:
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#!"):
            continue
        if stripped.startswith("#"):
            lines.append(stripped.lstrip("#").strip())
        elif not stripped and not lines:
            continue
        else:
            break
    return "\n".join(lines)
