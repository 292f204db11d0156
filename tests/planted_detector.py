"""A script that plants a problem detector in its own worker, for the tests of the report
the worker sends after its result: the detector writes ``looking`` beside the script when it
starts, waits for a file ``go`` there (at most a minute), then finds one dead-relu warning,
"planted: units dead", on each graph it is given."""

from __future__ import annotations

import textwrap
from pathlib import Path

PLANTS = """
import pathlib, time
import numpy as np
import autodiff.functions as F
from autodiff import Variable
import viewer.model.checks.detectors  # the real ones first: the planted one replaces one
from viewer.model.checks import problems as P

here = pathlib.Path(__file__).parent

@P.graph_detector("dead-relu")
def planted(g, limits, here=here, time=time, P=P):  # (bound now: the run drops the globals)
    (here / "looking").write_text(str(g.graph))
    deadline = time.monotonic() + 60
    while not (here / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return [P.Problem("dead-relu", "warning", "planted: units dead", g.graph, None, ())]

w = Variable(np.array([1.0, 2.0]), name="w")
for i in range(2):
    w.cleargrad()
    F.sum(w * w).backward()
print("trained")
"""


def write_plants(folder: Path) -> Path:
    """The script, as ``folder/plants.py``."""
    path = Path(folder) / "plants.py"
    path.write_text(textwrap.dedent(PLANTS).lstrip())
    return path
