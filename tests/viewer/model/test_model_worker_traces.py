"""The app reads back whatever recording its script worker sends: the worker's file is written
within the limits the app's reader keeps (names, op names, scope paths)."""

import textwrap

from autodiff.trace._checks import MAX_NAME, MAX_OP, MAX_SCOPE_PATH
from viewer.model.scripts.process import ScriptProcess

SCRIPT = """
import contextlib
import numpy as np
import autodiff
import autodiff.functions as F
from autodiff import Function, Variable

class Twice(Function):
    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy * 2

Twice.__name__ = "T" * 300
x = Variable(np.array(2.0), name="x" * 20_000)
with contextlib.ExitStack() as stack:
    for i in range(10_000):
        stack.enter_context(autodiff.scope(f"block{i}"))
    y = F.sin(Twice()(x)) * x
y.backward()
print("done")
"""


def test_a_run_with_ten_thousand_nested_scopes_is_shown(tmp_path):
    path = tmp_path / "nested.py"
    path.write_text(textwrap.dedent(SCRIPT).lstrip())
    result = ScriptProcess(path).run()
    assert result.ok, result.error
    assert "could not be sent" not in result.stderr and result.stdout == "done\n"
    t = result.trace
    deepest = t.scopes()[-1]
    assert deepest.depth == 10_000 and len(deepest.path) <= MAX_SCOPE_PATH
    assert deepest.path.startswith("block0/…/") and deepest.path.endswith("/block9999")
    assert t.node(0)["name"] == "x" * (MAX_NAME - 1) + "…"
    assert "T" * (MAX_OP - 1) + "…" in {t.node(f)["op"] for f in t.functions}
    assert result.graphs and result.view(len(result.graphs) - 1).steps
