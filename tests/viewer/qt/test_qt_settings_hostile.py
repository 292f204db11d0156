"""No value in the settings file stops the app from starting: each falls back to its default,
and the status bar names the key."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from PySide6 import QtCore

from viewer.app import build_window
from viewer.qt.settings import KEYS, MAX_SCRIPT_MEMORY_MB, AppSettings

GARBAGE = {
    "garbage": "garbage",
    "nan": "nan",
    "negative": "-3",
    "huge": str(10**24),
    "megabyte": "x" * 1_000_000,
}
# What each key makes of each garbage value: False where the value must be refused. Text
# keys take any short text (a file name "garbage" or "-3" is a name like any other).
TEXT_KEYS = {"files/recent", "files/lastDirectory", "files/lastExportDirectory", "editor/text"}


def _accepted(key: str, kind: str) -> bool:
    if key == "editor/text":
        return True  # a 1 MB program is kept (and refused with a message when it runs)
    return key in TEXT_KEYS and kind != "megabyte"


def _write_ini(folder, lines: dict[str, str]) -> None:
    """The settings file as a user or another program might leave it."""
    store = AppSettings().store
    path = store.fileName()
    del store
    sections: dict[str, list[str]] = {}
    for key, value in lines.items():
        section, name = key.split("/")
        sections.setdefault(section, []).append(f"{name}={value}")
    text = "".join(f"[{s}]\n" + "\n".join(v) + "\n" for s, v in sections.items())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    assert str(folder) in path


@pytest.mark.parametrize("kind", sorted(GARBAGE))
@pytest.mark.parametrize("key", sorted(KEYS))
def test_the_window_starts_whatever_a_key_holds(qtbot, isolated_settings, key, kind):
    _write_ini(isolated_settings, {key: GARBAGE[kind]})
    window = build_window([])
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    keys = [p.key for p in window.settings.problems]
    if _accepted(key, kind):
        assert key not in keys
        return
    assert keys == [key]
    qtbot.waitUntil(lambda: key in window.statusBar().currentMessage(), timeout=10_000)
    message = window.statusBar().currentMessage()
    assert len(message) < 400  # one line, not the megabyte
    # the window works: a program runs
    assert window.editor_binding.run("y = x * 3")
    assert window.document.trace is not None


def test_every_key_garbage_at_once_is_one_status_line(qtbot, isolated_settings):
    _write_ini(isolated_settings, dict.fromkeys(KEYS, "nan"))
    window = build_window([])
    qtbot.addWidget(window)
    refused = [k for k in KEYS if not _accepted(k, "nan")]
    assert sorted(p.key for p in window.settings.problems) == sorted(refused)
    qtbot.waitUntil(
        lambda: "Settings ignored" in window.statusBar().currentMessage(), timeout=10_000
    )
    message = window.statusBar().currentMessage()
    assert "\n" not in message
    for key in refused:
        assert key in message
    assert window.document.palette == "light"
    assert math.isclose(window.document.playback.speed, 4.0)


@pytest.mark.parametrize(
    ("key", "stored", "reader", "expected"),
    [
        ("view/theme", "dark", "theme", "dark"),
        ("view/theme", "DARK", "theme", "light"),
        ("playback/speed", "12.5", "speed", 12.5),
        ("playback/speed", "inf", "speed", None),
        ("playback/speed", "1000", "speed", None),
        ("view/overview", "off", "overview_shown", False),
        ("view/overview", "maybe", "overview_shown", True),
        ("view/edgeGradients", "on", "edge_gradients_shown", True),
        ("view/edgeGradients", "<b>", "edge_gradients_shown", False),
        ("limits/stepBudget", "150", "step_budget", 150),
        ("limits/stepBudget", "1.5", "step_budget", KEYS["limits/stepBudget"].default),
        ("limits/scriptMaxPasses", "1", "script_max_passes", 1000),
        ("limits/scriptMemoryMB", "0", "script_memory_mb", 0),
        ("limits/scriptMemoryMB", str(MAX_SCRIPT_MEMORY_MB), "script_memory_mb", 1 << 30),
        ("limits/scriptMemoryMB", str(MAX_SCRIPT_MEMORY_MB + 1), "script_memory_mb", None),
    ],
)
def test_each_reader_checks_type_and_range(key, stored, reader, expected):
    settings = AppSettings()
    settings.store.setValue(key, stored)
    assert getattr(settings, reader)() == expected
    refused = expected == KEYS[key].default and stored != str(KEYS[key].default)
    assert ([p.key for p in settings.problems] == [key]) == refused


def test_a_value_written_by_the_app_reads_back_without_a_problem(qtbot):
    settings = AppSettings()
    settings.set_speed(7.5)
    settings.set_theme("dark")
    settings.set_follow_active_step(False)
    settings.set_geometry(QtCore.QByteArray(b"\x01\x02"))
    settings.add_recent_file("a.expr")
    settings.sync()
    again = AppSettings()
    assert again.speed() == 7.5
    assert again.theme() == "dark"
    assert again.follow_active_step() is False
    assert again.geometry() == QtCore.QByteArray(b"\x01\x02")
    assert len(again.recent_files()) == 1
    assert again.problems == ()
