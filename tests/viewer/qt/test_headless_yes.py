"""``--export`` of a .py asks as the window does: it runs the script only with --yes, and a
failing script is one line on stderr unless --verbose."""

import textwrap

from viewer.app import main

GOOD = """
import pathlib
import numpy as np
import autodiff.functions as F
from autodiff import Variable
pathlib.Path("ran").write_text("yes")
x = Variable(np.array(0.5), name="x")
y = F.exp(F.square(x))
y.backward()
"""

BROKEN = """
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array(0.5), name="x")
y = F.exp(x)
y.backward()
print("the script's own output")
ratio = 1 / 0
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def err_lines(capsys):
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_without_yes_the_script_does_not_run(qapp, tmp_path, capsys):
    script = write(tmp_path, "train.py", GOOD)
    out = tmp_path / "g.png"
    assert main(["--export", str(out), str(script)]) == 2
    lines = err_lines(capsys)
    assert len(lines) == 1 and "--yes" in lines[0] and "train.py" in lines[0]
    assert not (tmp_path / "ran").exists()
    assert not out.exists()


def test_with_yes_the_script_runs_and_is_rendered(qapp, tmp_path, capsys):
    script = write(tmp_path, "train.py", GOOD)
    out = tmp_path / "g.png"
    assert main(["--export", str(out), "--yes", str(script)]) == 0
    assert (tmp_path / "ran").exists()
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failing_script_is_one_line_naming_its_line(qapp, tmp_path, capsys):
    script = write(tmp_path, "broken.py", BROKEN)
    assert main(["--export", str(tmp_path / "g.png"), "--yes", str(script)]) == 1
    lines = err_lines(capsys)
    assert len(lines) == 1, lines
    assert "broken.py line 8: ZeroDivisionError: division by zero" in lines[0]
    assert "Traceback" not in lines[0]


def test_verbose_prints_the_traceback(qapp, tmp_path, capsys):
    script = write(tmp_path, "broken.py", BROKEN)
    argv = ["--export", str(tmp_path / "g.png"), "--yes", "--verbose", str(script)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "broken.py line 8: ZeroDivisionError: division by zero" in err
