"""An earlier commit's ``autodiff`` in this process, beside the current one, for before/after.

    base = baseline.load("cfa9107")        # git archive of that commit's autodiff/ package
    with base.active():                     # ``import autodiff...`` inside means the old one
        ...
    base.module("autodiff.functions")       # its modules, usable outside the block too

Both packages are named ``autodiff``, so they cannot sit in ``sys.modules`` together. The old
one is imported into a temporary folder and its modules are kept aside; :meth:`Baseline.active`
swaps them in for a block (the current ones come back after it). A function of either version
keeps working outside its block, since it reads the module globals it was defined with; only an
import made while running (``from autodiff import x`` inside a function) needs the block, which
is why every timed call of the old engine runs inside it. Every submodule is imported (and
``core``'s lazy import of ``functions`` resolved) up front, so nothing is imported while timing.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import pkgutil
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "autodiff"


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _take_modules() -> dict[str, types.ModuleType]:
    """Remove the package's modules from ``sys.modules`` and return them."""
    return {name: sys.modules.pop(name) for name in [n for n in sys.modules if _ours(n)]}


class Baseline:
    def __init__(self, ref: str, commit: str, modules: dict[str, types.ModuleType]) -> None:
        self.ref = ref
        self.commit = commit
        self.modules = modules

    def module(self, name: str) -> types.ModuleType:
        return self.modules[name]

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        current = _take_modules()
        sys.modules.update(self.modules)
        try:
            yield
        finally:
            _take_modules()
            sys.modules.update(current)


def load(ref: str, repo: Path = ROOT) -> Baseline:
    """Import ``ref``'s ``autodiff`` package (from git) beside the current one."""
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", commit, PACKAGE],
        capture_output=True,
        check=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix=f"autodiff-{commit}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")

    importlib.import_module(PACKAGE)  # the current package is loaded first, and kept
    current = _take_modules()
    sys.path.insert(0, str(folder))
    try:
        package = importlib.import_module(PACKAGE)
        for info in pkgutil.walk_packages(package.__path__, PACKAGE + "."):
            if not info.name.rsplit(".", 1)[-1].startswith("__"):
                importlib.import_module(info.name)
        core = sys.modules[PACKAGE + ".core"]
        resolve = getattr(core, "_functions", None)
        if resolve is not None:
            resolve()
        modules = _take_modules()
    finally:
        sys.path.remove(str(folder))
        _take_modules()
        sys.modules.update(current)
        importlib.invalidate_caches()
    for name, module in modules.items():
        file = getattr(module, "__file__", None)
        if file is not None and not Path(file).is_relative_to(folder):
            raise RuntimeError(f"baseline {ref}: {name} was imported from {file}, not {folder}")
    return Baseline(ref, commit, modules)
