"""One accessor for the bundled resources (icons, stylesheets, example programs).

The repository keeps them in a top-level ``resources/`` folder; the wheel ships that folder as
``viewer/resources`` (hatch ``force-include``). :func:`root` finds whichever exists: the
installed package data through :mod:`importlib.resources`, else ``<repo>/resources`` in a
source or editable checkout. Names are ``/``-separated paths below that folder, e.g.
``"examples/diamond.expr"``.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

__all__ = ["names", "path", "read_bytes", "read_text", "root"]


@functools.cache
def root() -> Path:
    """The resources folder."""
    try:
        packaged = resources.files("viewer") / "resources"
        if packaged.is_dir():
            return Path(str(packaged))
    except (ModuleNotFoundError, TypeError):
        pass
    source = Path(__file__).resolve().parents[2] / "resources"
    if source.is_dir():
        return source
    raise FileNotFoundError(
        "the viewer's resources were not found: neither viewer/resources in the installed "
        f"package nor {source} in a source checkout; reinstall the package"
    )


def names(prefix: str = "") -> list[str]:
    """Every resource name (files only, sorted), optionally under a folder ``prefix``."""
    base = root()
    found = []
    for file in base.rglob("*"):
        if file.is_file() and "__pycache__" not in file.parts:
            name = file.relative_to(base).as_posix()
            if name.startswith(prefix):
                found.append(name)
    return sorted(found)


def path(name: str) -> Path:
    """The file of resource ``name``; an unknown name raises ValueError listing the known."""
    clean = name.replace("\\", "/").strip("/")
    parts = clean.split("/")
    if not clean or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid resource name {name!r}")
    file = root().joinpath(*parts)
    if not file.is_file():
        known = names()
        raise ValueError(
            f"unknown resource {name!r}; known resources: {', '.join(known) or '(none)'}"
        )
    return file


def read_text(name: str, encoding: str = "utf-8") -> str:
    return path(name).read_text(encoding=encoding)


def read_bytes(name: str) -> bytes:
    return path(name).read_bytes()
