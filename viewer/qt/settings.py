"""What survives a restart: window geometry and dock state, recent files, the editor's text,
the theme, whether the first-run tour was seen, whether the graph follows the active step,
shows its overview and labels the step's edges with their gradients, the playback speed and
the run limits, stored with QSettings (an INI file in the user's config folder).

The file is the user's to edit, and anything can be in it. Every value is checked against its
type and range when it is read; one that fails falls back to its default and is remembered in
:attr:`AppSettings.problems` (the window names those keys in its status bar), so no value in
the file can stop the app from starting. The table of keys, types and ranges is
:data:`KEYS`; docs/limits.md lists them.

Tests point the whole thing elsewhere with ``QSettings.setPath`` (or pass their own QSettings).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from PySide6 import QtCore

from viewer.model.checks.problems import Thresholds
from viewer.model.document.playback import MAX_SPEED, MIN_SPEED
from viewer.model.expression.rules import MAX_STEPS, MAX_TOTAL_ELEMENTS
from viewer.model.scripts.pass_sampling import DEFAULT_MAX_PASSES

__all__ = ["KEYS", "MAX_RECENT", "ORGANIZATION", "AppSettings", "SettingsProblem"]

ORGANIZATION = "autodiff-viewer"
APPLICATION = "viewer"
MAX_RECENT = 10
THEME_NAMES = ("light", "dark")
MAX_PATH_CHARS = 4096
MAX_EDITOR_CHARS = 1 << 20  # far above what the expression language runs (20 000)
MAX_SAVED_LAYOUT_BYTES = 1 << 20  # window/geometry, window/state
MAX_DOCK_WIDTH = 20_000  # px: wider than any screen's
# The largest memory limit a script may be given, in MiB (1 PiB): anything above cannot be a
# real machine's, and setrlimit would refuse it.
MAX_SCRIPT_MEMORY_MB = 1 << 30


@dataclass(frozen=True)
class SettingsProblem:
    """A value in the settings file that was not used: its key and why."""

    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.key} ({self.reason})"


class _Invalid(ValueError):
    """A stored value failed its check; the message says why, in a few words."""


def _shown(value: Any) -> str:
    """A stored value as a message quotes it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _text(value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"not text: {_shown(value)}")
    if len(value) > limit:
        raise _Invalid(f"{len(value):,} characters, more than {limit:,}")
    return value


def _path(value: Any) -> str:
    text = _text(value, MAX_PATH_CHARS)
    if "\0" in text or "\n" in text:
        raise _Invalid("not a file name: it holds a NUL or a line break")
    return text


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    words = {"true": True, "1": True, "yes": True, "on": True}
    words.update({"false": False, "0": False, "no": False, "off": False})
    if isinstance(value, str) and value.strip().lower() in words:
        return words[value.strip().lower()]
    raise _Invalid(f"not true or false: {_shown(value)}")


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise _Invalid(f"not a number: {_shown(value)}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and len(value) <= 64:
        try:
            number = float(value.strip())
        except ValueError:
            raise _Invalid(f"not a number: {_shown(value)}") from None
    else:
        raise _Invalid(f"not a number: {_shown(value)}")
    if not math.isfinite(number):
        raise _Invalid(f"not a finite number: {_shown(value)}")
    return number


def _integer(value: Any, low: int, high: int) -> int:
    number = _number(value)
    if number != int(number):
        raise _Invalid(f"not a whole number: {_shown(value)}")
    if not low <= number <= high:
        raise _Invalid(f"{_shown(value)} is outside {low:,} to {high:,}")
    return int(number)


def _speed(value: Any) -> float:
    number = _number(value)
    if not MIN_SPEED <= number <= MAX_SPEED:
        raise _Invalid(f"{_shown(value)} is outside {MIN_SPEED:g} to {MAX_SPEED:g} steps/s")
    return number


def _theme(value: Any) -> str:
    if value not in THEME_NAMES:
        raise _Invalid(f"not a theme: {_shown(value)}; the themes are {', '.join(THEME_NAMES)}")
    return value


def _saved_layout(value: Any) -> QtCore.QByteArray | None:
    if not isinstance(value, QtCore.QByteArray):
        raise _Invalid(f"not a saved window layout: {_shown(value)}")
    if value.size() > MAX_SAVED_LAYOUT_BYTES:
        raise _Invalid(f"{value.size():,} bytes, more than {MAX_SAVED_LAYOUT_BYTES:,}")
    return None if value.isEmpty() else value


def _dock_widths(value: Any) -> tuple[int, int]:
    """Two widths in pixels, as QSettings gives back a list (or the INI line as text)."""
    parts = value.split(",") if isinstance(value, str) and len(value) <= 64 else value
    if not isinstance(parts, list | tuple) or len(parts) != 2:
        raise _Invalid(f"not two widths: {_shown(value)}")
    left, right = (_integer(part, 0, MAX_DOCK_WIDTH) for part in parts)
    return left, right


def _recent(value: Any) -> list[str]:
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list):
        raise _Invalid(f"not a list of files: {_shown(value)}")
    return [_path(entry) for entry in entries if entry][:MAX_RECENT]


def _threshold(name: str, default: float) -> Callable[[Any], Any]:
    """The check of the ``[problems]`` key ``name``: a positive number (a whole one where the
    default is), at most 1 for a share (``*_fraction``, ``*_level``), else at most 10**9."""
    high = 1.0 if name.endswith(("_fraction", "_level")) else 1e9

    def check(value: Any) -> Any:
        if isinstance(default, int):
            return _integer(value, 1, int(high))
        number = _number(value)
        if not 0 < number <= high:
            raise _Invalid(f"{_shown(value)} is outside 0 (excluded) to {high:g}")
        return number

    return check


@dataclass(frozen=True)
class _Key:
    default: Any
    check: Callable[[Any], Any]


# Every key the app reads, its default and its check. None as a default means "not set":
# the caller decides (the saved layout, a speed the playback keeps, the memory limit's
# default that depends on the machine).
KEYS: dict[str, _Key] = {
    "window/geometry": _Key(None, _saved_layout),
    "window/state": _Key(None, _saved_layout),
    "window/dockWidths": _Key(None, _dock_widths),
    "files/recent": _Key([], _recent),
    "files/lastDirectory": _Key("", _path),
    "files/lastExportDirectory": _Key("", _path),
    "editor/text": _Key(None, lambda v: _text(v, MAX_EDITOR_CHARS)),
    "view/theme": _Key("light", _theme),
    "view/followActiveStep": _Key(True, _flag),
    "view/overview": _Key(True, _flag),
    "view/edgeGradients": _Key(False, _flag),
    "help/tourSeen": _Key(False, _flag),
    "playback/speed": _Key(None, _speed),
    "limits/elementBudget": _Key(MAX_TOTAL_ELEMENTS, lambda v: _integer(v, 1, 10**10)),
    "limits/stepBudget": _Key(MAX_STEPS, lambda v: _integer(v, 1, 10**8)),
    "limits/scriptMaxPasses": _Key(DEFAULT_MAX_PASSES, lambda v: _integer(v, 2, 10**7)),
    "limits/scriptMemoryMB": _Key(None, lambda v: _integer(v, 0, MAX_SCRIPT_MEMORY_MB)),
    # when each problem detector speaks up (viewer.model.checks.problems.Thresholds)
    **{
        f"problems/{f.name}": _Key(f.default, _threshold(f.name, f.default))
        for f in fields(Thresholds)
    },
}


class AppSettings:
    """Checked, typed accessors over one QSettings store."""

    def __init__(self, store: QtCore.QSettings | None = None) -> None:
        self.store = store or QtCore.QSettings(
            QtCore.QSettings.Format.IniFormat,
            QtCore.QSettings.Scope.UserScope,
            ORGANIZATION,
            APPLICATION,
        )
        self._problems: dict[str, SettingsProblem] = {}

    @property
    def problems(self) -> tuple[SettingsProblem, ...]:
        """The keys whose stored values were not used (their defaults were), in reading order."""
        return tuple(self._problems.values())

    def check_all(self) -> tuple[SettingsProblem, ...]:
        """Read every key once (the window does at start): :attr:`problems` then names every
        stored value that is not used, not only those read so far."""
        for key in KEYS:
            self.read(key)
        return self.problems

    def problem_message(self) -> str:
        """One line naming the keys that were not used, or '' (short enough for the status
        bar beside the graph's counts)."""
        problems = self.problems
        if not problems:
            return ""
        if len(problems) == 1:
            return f"Settings: {problems[0]} ignored; default used"
        keys = ", ".join(p.key for p in problems)
        return f"Settings ignored, defaults used: {keys}"

    def refuse(self, key: str, reason: str) -> None:
        """A value that passed its check but could not be used (Qt refused a saved window
        layout): named in :attr:`problems` like one that failed its check."""
        self._problems[key] = SettingsProblem(key, reason)

    def read(self, key: str) -> Any:
        """The value stored under ``key`` if it passes its check, else the key's default."""
        spec = KEYS[key]
        try:
            value = self.store.value(key)
        except (RuntimeError, TypeError, ValueError, OverflowError, MemoryError) as error:
            self._problems[key] = SettingsProblem(key, f"unreadable: {error}")
            return spec.default
        if value is None:
            return spec.default
        try:
            result = spec.check(value)
        except _Invalid as problem:
            self._problems.setdefault(key, SettingsProblem(key, str(problem)))
            return spec.default
        self._problems.pop(key, None)
        return result

    # ---------------------------------------------------------------- window
    def geometry(self) -> QtCore.QByteArray | None:
        return self.read("window/geometry")

    def set_geometry(self, value: QtCore.QByteArray) -> None:
        self.store.setValue("window/geometry", value)

    def window_state(self) -> QtCore.QByteArray | None:
        return self.read("window/state")

    def set_window_state(self, value: QtCore.QByteArray) -> None:
        self.store.setValue("window/state", value)

    def dock_widths(self) -> tuple[int, int] | None:
        """The widths the user wants for the left and right dock columns (the window's docks
        give them back as the window grows; 0: the default for the window's width), or None
        when none are saved."""
        return self.read("window/dockWidths")

    def set_dock_widths(self, widths: tuple[int, int]) -> None:
        self.store.setValue("window/dockWidths", [int(w) for w in widths])

    # ---------------------------------------------------------------- recent files
    def recent_files(self) -> list[str]:
        return list(self.read("files/recent"))

    def add_recent_file(self, path: str | Path) -> list[str]:
        path = str(Path(path).resolve())
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        recent = recent[:MAX_RECENT]
        self.store.setValue("files/recent", recent)
        return recent

    def remove_recent_file(self, path: str) -> None:
        self.store.setValue("files/recent", [p for p in self.recent_files() if p != path])

    def clear_recent_files(self) -> None:
        self.store.setValue("files/recent", [])

    def last_directory(self) -> str:
        return self.read("files/lastDirectory")

    def set_last_directory(self, path: str | Path) -> None:
        self.store.setValue("files/lastDirectory", str(path))

    def last_export_directory(self) -> str:
        return self.read("files/lastExportDirectory")

    def set_last_export_directory(self, path: str | Path) -> None:
        self.store.setValue("files/lastExportDirectory", str(path))

    # ---------------------------------------------------------------- editor, view
    def editor_text(self) -> str | None:
        return self.read("editor/text")

    def set_editor_text(self, text: str) -> None:
        self.store.setValue("editor/text", text)

    def theme(self) -> str:
        return self.read("view/theme")

    def set_theme(self, name: str) -> None:
        self.store.setValue("view/theme", name)

    def follow_active_step(self) -> bool:
        """Whether the graph view pans to keep the current step in view (default on)."""
        return self.read("view/followActiveStep")

    def set_follow_active_step(self, on: bool) -> None:
        self.store.setValue("view/followActiveStep", bool(on))

    def overview_shown(self) -> bool:
        """Whether the graph view shows its overview (minimap); default on."""
        return self.read("view/overview")

    def set_overview_shown(self, on: bool) -> None:
        self.store.setValue("view/overview", bool(on))

    def edge_gradients_shown(self) -> bool:
        """Whether the current backward step's edges are labelled with the gradients they
        carry (default off)."""
        return self.read("view/edgeGradients")

    def set_edge_gradients_shown(self, on: bool) -> None:
        self.store.setValue("view/edgeGradients", bool(on))

    def tour_seen(self) -> bool:
        """Whether the first-run tour was finished or dismissed (Help > Tour replays it)."""
        return self.read("help/tourSeen")

    def set_tour_seen(self, seen: bool) -> None:
        self.store.setValue("help/tourSeen", bool(seen))

    def speed(self) -> float | None:
        """The playback speed in steps per second, or None when none is saved."""
        return self.read("playback/speed")

    def set_speed(self, value: float) -> None:
        self.store.setValue("playback/speed", float(value))

    # ---------------------------------------------------------------- limits
    def element_budget(self) -> int:
        """The elements a typed program may create in all (``limits/elementBudget``)."""
        return self.read("limits/elementBudget")

    def step_budget(self) -> int:
        """The steps a typed program's run may record (``limits/stepBudget``)."""
        return self.read("limits/stepBudget")

    def script_max_passes(self) -> int:
        """About how many backward passes of a script's run keep their graphs
        (``limits/scriptMaxPasses``, at least 2)."""
        return self.read("limits/scriptMaxPasses")

    def script_memory_mb(self) -> int | None:
        """The resident memory a script's process may use, in MiB (``limits/scriptMemoryMB``):
        0 for no limit; None (the default, 800 MiB) when unset or invalid."""
        return self.read("limits/scriptMemoryMB")

    def problem_thresholds(self) -> Thresholds:
        """When the problem detectors speak up: the ``[problems]`` group (``dead_fraction``,
        ``budget_seconds``...: the fields of :class:`Thresholds`); a value that fails its
        check keeps its default."""
        values = {f.name: self.read(f"problems/{f.name}") for f in fields(Thresholds)}
        return Thresholds.from_mapping(values)

    def sync(self) -> None:
        self.store.sync()
