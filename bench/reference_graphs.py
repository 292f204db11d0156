"""The reference graph generator ``gen_dag.py`` (``gen_graph(n, seed)``, ``to_dot``), shared
by the layout and render benchmarks; it lives in ``shared/bench/`` beside the repository."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

GEN_DAG = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "gen_dag.py"


def load_gen_dag(path: Path = GEN_DAG) -> ModuleType:
    """Import the generator at ``path``; exits with a message saying how to point at it."""
    if not path.is_file():
        raise SystemExit(
            f"gen_dag.py not found at {path}; pass --gen-dag PATH (the reference generator "
            "lives in shared/bench/ beside the repository)"
        )
    spec = importlib.util.spec_from_file_location("gen_dag", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
