"""QSettings survive a restart (in an isolated folder); the command line and --export."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from viewer.app import build_window, main
from viewer.model import assets
from viewer.qt.settings import AppSettings

REPO = Path(__file__).resolve().parents[3]
TANH = str(assets.path("examples/tanh_x2.expr"))


def test_settings_live_in_the_isolated_folder(isolated_settings):
    store = AppSettings().store
    assert str(isolated_settings) in store.fileName()


def test_window_state_recent_files_and_editor_text_survive_a_restart(qtbot, tmp_path):
    first = build_window([])
    qtbot.addWidget(first)
    first.show()
    first.resize(720, 520)  # within the offscreen screen (800 x 600)
    first.editor.set_text("y = sin(x) * x")
    first.editor_binding.run()
    expr = tmp_path / "saved.expr"
    expr.write_text("y = cos(x)\n")
    assert first.open_path(expr)
    first.editor.set_text("y = sin(x) * x  # typed, never run")
    first.set_theme("dark")
    first.close()  # saves the settings

    second = build_window([])
    qtbot.addWidget(second)
    assert second.editor.text() == "y = sin(x) * x  # typed, never run"
    assert second.settings.recent_files()[0] == str(expr.resolve())
    assert second.theme.name == "dark"
    assert (second.width(), second.height()) == (720, 520)
    # the saved text runs once the event loop is up, never before the window exists
    assert second.document.trace.steps[0].op == "Square"
    qtbot.waitUntil(lambda: second.document.trace.steps[0].op == "Sin", timeout=30_000)
    second.close()


def test_saved_text_that_does_not_run_is_kept_with_its_error(qtbot):
    AppSettings().set_editor_text("y = x +")
    window = build_window([])
    qtbot.addWidget(window)
    assert window.editor.text() == "y = x +"
    qtbot.waitUntil(lambda: bool(window.editor.error_text()), timeout=30_000)
    assert window.editor.text() == "y = x +"
    assert window.document.scene is not None  # the seeds' example is on screen meanwhile


def test_a_saved_program_that_used_to_crash_the_start_up_shows_an_error(qtbot):
    # issue 11: constant folding raised a raw OverflowError, and the saved text ran inside
    # build_window(), so the app could not start until its settings were deleted
    AppSettings().set_editor_text("y = x * arange(1e309)")
    window = build_window([])
    qtbot.addWidget(window)
    assert window.document.scene is not None
    qtbot.waitUntil(lambda: "finite" in window.editor.error_text(), timeout=30_000)
    assert window.editor.text() == "y = x * arange(1e309)"


def test_build_window_opens_a_file_argument(qtbot, tmp_path):
    expr = tmp_path / "given.expr"
    expr.write_text("a = 2.0\ny = a * a + a\n")
    window = build_window([str(expr)])
    qtbot.addWidget(window)
    assert window.editor.text() == "a = 2.0\ny = a * a + a\n"
    assert window.document.program.leaves == ("a",)


def test_export_png_and_svg_exit_zero(qapp, tmp_path, capsys):
    png, svg = tmp_path / "g.png", tmp_path / "g.svg"
    assert main(["--export", str(png), "--phase", "backward", TANH]) == 0
    assert main(["--export", str(svg), "--step", "2", TANH]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    text = svg.read_text()
    assert "<svg" in text and "Tanh" in text
    assert main(["--export", str(tmp_path / "f.png"), "--phase", "forward", TANH]) == 0


def test_export_pdf_is_one_page_the_size_of_the_picture(qapp, tmp_path, capsys):
    import re

    pdf, png = tmp_path / "g.pdf", tmp_path / "g.png"
    assert main(["--export", str(pdf), TANH]) == 0
    assert main(["--export", str(png), TANH]) == 0
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-"
    boxes = re.findall(rb"/MediaBox \[0 0 ([0-9.]+) ([0-9.]+)\]", data)
    assert len(boxes) == 1
    width = int.from_bytes(png.read_bytes()[16:20], "big")  # the PNG's IHDR
    assert abs(float(boxes[0][0]) - width) <= 1


def test_export_of_a_fifo_or_a_folder_says_it_is_not_a_file(qapp, tmp_path, capsys):
    import os

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for source in (fifo, tmp_path):
        assert main(["--export", str(tmp_path / "a.png"), str(source)]) != 0
        err = capsys.readouterr().err
        assert "not a regular file" in err and "no such file" not in err, err


def test_export_errors_exit_non_zero_with_a_message(qapp, tmp_path, capsys):
    missing = tmp_path / "missing.expr"
    assert main(["--export", str(tmp_path / "a.png"), str(missing)]) != 0
    assert "no such file" in capsys.readouterr().err
    broken = tmp_path / "broken.expr"
    broken.write_text("y = exp(x +\n")
    assert main(["--export", str(tmp_path / "b.png"), str(broken)]) != 0
    err = capsys.readouterr().err
    assert "broken.expr" in err and "line 1" in err
    assert not (tmp_path / "b.png").exists()
    bad_trace = tmp_path / "bad.json"
    bad_trace.write_text("{not json")
    assert main(["--export", str(tmp_path / "c.png"), str(bad_trace)]) != 0
    assert "bad.json" in capsys.readouterr().err
    assert main(["--export", str(tmp_path / "d.bmp"), TANH]) != 0
    assert ".png or .svg" in capsys.readouterr().err
    assert main(["--export", str(tmp_path / "e.png"), "--step", "99", TANH]) != 0
    assert "out of range" in capsys.readouterr().err
    assert main(["--step", "2"]) == 2
    assert "--export" in capsys.readouterr().err


def test_python_dash_m_viewer_exports_without_a_display(tmp_path):
    out = tmp_path / "shot.png"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    done = subprocess.run(
        [sys.executable, "-m", "viewer", "--export", str(out), "--phase", "backward", TANH],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 5000
    failed = subprocess.run(
        [sys.executable, "-m", "viewer", "--export", str(out), str(tmp_path / "nope.expr")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode != 0
    assert "nope.expr" in failed.stderr


def test_without_a_display_the_app_says_so_instead_of_aborting(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    done = subprocess.run(
        [sys.executable, "-m", "viewer"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "--export" in done.stderr


def test_the_run_budgets_come_from_the_settings(qtbot):
    settings = AppSettings()
    settings.store.setValue("limits/stepBudget", "150")
    settings.store.setValue("limits/elementBudget", "not a number")  # ignored: the default
    window = build_window([])
    qtbot.addWidget(window)
    assert window.document.step_budget == 150
    from viewer.model.expression.program import MAX_TOTAL_ELEMENTS

    assert window.document.element_budget == MAX_TOTAL_ELEMENTS
    program = "y = tanh(x)\n" + "\n".join(
        f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, 5)
    )
    assert window.editor_binding.run(program) is False
    assert "limits/stepBudget" in str(window.document.last_error)


@pytest.mark.parametrize(("stored", "expected"), [("512", 512), ("0", 0), ("lots", None)])
def test_a_scripts_memory_limit_comes_from_the_settings(qtbot, tmp_path, stored, expected):
    AppSettings().store.setValue("limits/scriptMemoryMB", stored)
    window = build_window([])
    qtbot.addWidget(window)
    assert window.document.script_memory_mb == expected
    script = tmp_path / "s.py"
    script.write_text("x = 1\n")
    run = window.document.prepare_script(script)
    # unset or refused: the default bound, and the status bar says the value was ignored
    assert run.memory_mb == (800 if expected is None else expected)
    if expected is None:
        qtbot.waitUntil(
            lambda: "limits/scriptMemoryMB" in window.statusBar().currentMessage(), timeout=10_000
        )
        assert "ignored; default used" in window.statusBar().currentMessage()
    window.document.script_run = None


@pytest.mark.parametrize(
    ("stored", "argv", "expected"),
    [(None, [], 1000), ("300", [], 300), ("none", [], 1000), ("300", ["--max-passes", "40"], 40)],
)
def test_the_passes_a_script_keeps_come_from_the_settings_or_the_command_line(
    qtbot, tmp_path, stored, argv, expected
):
    if stored is not None:
        AppSettings().store.setValue("limits/scriptMaxPasses", stored)
    window = build_window(argv)
    qtbot.addWidget(window)
    assert window.document.script_max_passes == expected
    script = tmp_path / "s.py"
    script.write_text("x = 1\n")
    run = window.document.prepare_script(script)
    assert run.max_passes == expected
    window.document.script_run = None


def test_max_passes_must_be_at_least_two(capsys):
    assert main(["--max-passes", "1"]) == 2
    assert "--max-passes must be at least 2" in capsys.readouterr().err


def test_a_script_on_the_command_line_is_not_raced_by_the_saved_program(
    qtbot, tmp_path, wait_for_script
):
    AppSettings().store.setValue("editor/text", "x = 1.5\ny = x * 2\n")
    script = tmp_path / "s.py"
    release = tmp_path / "release"
    # the script runs until the test releases it (60 s at most)
    script.write_text(
        "import pathlib, time\n"
        f"for _ in range(6000):\n    if pathlib.Path({str(release)!r}).exists(): break\n"
        "    time.sleep(0.01)\n"
        "raise ValueError('no graph')\n"
    )
    window = build_window([str(script), "--yes"])
    qtbot.addWidget(window)
    qtbot.wait(200)  # the saved program's turn comes with the event loop
    assert window.document.script_run is not None  # it came while the script ran
    release.touch()
    wait_for_script(window)
    # The failed script leaves the expression on screen, without a stale "a script is
    # running" error from the saved program's refused start.
    assert "script is running" not in window.editor.error_text()
