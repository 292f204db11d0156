"""What survives a restart: window geometry and dock state, recent files, the editor's text,
the theme, whether the graph follows the active step and shows its overview, and the
playback speed, stored with
QSettings (an INI file in the user's config folder).

Tests point the whole thing elsewhere with ``QSettings.setPath`` (or pass their own QSettings).
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore

__all__ = ["MAX_RECENT", "ORGANIZATION", "AppSettings"]

ORGANIZATION = "autodiff-viewer"
APPLICATION = "viewer"
MAX_RECENT = 10


class AppSettings:
    """Typed accessors over one QSettings store."""

    def __init__(self, store: QtCore.QSettings | None = None) -> None:
        self.store = store or QtCore.QSettings(
            QtCore.QSettings.Format.IniFormat,
            QtCore.QSettings.Scope.UserScope,
            ORGANIZATION,
            APPLICATION,
        )

    # ---------------------------------------------------------------- window
    def geometry(self) -> QtCore.QByteArray | None:
        return self._bytes("window/geometry")

    def set_geometry(self, value: QtCore.QByteArray) -> None:
        self.store.setValue("window/geometry", value)

    def window_state(self) -> QtCore.QByteArray | None:
        return self._bytes("window/state")

    def set_window_state(self, value: QtCore.QByteArray) -> None:
        self.store.setValue("window/state", value)

    def _bytes(self, key: str) -> QtCore.QByteArray | None:
        value = self.store.value(key)
        return value if isinstance(value, QtCore.QByteArray) and not value.isEmpty() else None

    # ---------------------------------------------------------------- recent files
    def recent_files(self) -> list[str]:
        value = self.store.value("files/recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or []) if v][:MAX_RECENT]

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
        return str(self.store.value("files/lastDirectory", "") or "")

    def set_last_directory(self, path: str | Path) -> None:
        self.store.setValue("files/lastDirectory", str(path))

    # ---------------------------------------------------------------- editor, view
    def editor_text(self) -> str | None:
        value = self.store.value("editor/text")
        return None if value is None else str(value)

    def set_editor_text(self, text: str) -> None:
        self.store.setValue("editor/text", text)

    def theme(self) -> str:
        return str(self.store.value("view/theme", "light") or "light")

    def set_theme(self, name: str) -> None:
        self.store.setValue("view/theme", name)

    def follow_active_step(self) -> bool:
        """Whether the graph view pans to keep the current step in view (default on)."""
        value = self.store.value("view/followActiveStep", True)
        if isinstance(value, str):  # an INI file gives back text
            return value.strip().lower() not in ("false", "0", "no", "off")
        return bool(value)

    def set_follow_active_step(self, on: bool) -> None:
        self.store.setValue("view/followActiveStep", bool(on))

    def overview_shown(self) -> bool:
        """Whether the graph view shows its overview (minimap); default on."""
        return self._flag("view/overview", True)

    def set_overview_shown(self, on: bool) -> None:
        self.store.setValue("view/overview", bool(on))

    def _flag(self, key: str, default: bool) -> bool:
        value = self.store.value(key, default)
        if isinstance(value, str):  # an INI file gives back text
            return value.strip().lower() not in ("false", "0", "no", "off")
        return bool(value)

    def speed(self) -> float | None:
        value = self.store.value("playback/speed")
        try:
            return None if value is None else float(value)
        except (TypeError, ValueError):
            return None

    def set_speed(self, value: float) -> None:
        self.store.setValue("playback/speed", float(value))

    def budget(self, key: str, default: int) -> int:
        """A limit of a typed program's run (``limits/elementBudget``, ``limits/stepBudget``
        in the settings file): a positive integer, else ``default``."""
        value = self.store.value(f"limits/{key}")
        try:
            number = int(str(value).strip()) if value is not None else default
        except ValueError:
            return default
        return number if number > 0 else default

    def script_memory_mb(self) -> int | None:
        """The memory a script's process may use, in MiB (``limits/scriptMemoryMB``): 0 for
        no limit; None (the default, half the machine's memory) when unset or not a number."""
        value = self.store.value("limits/scriptMemoryMB")
        try:
            number = int(str(value).strip()) if value is not None else -1
        except ValueError:
            return None
        return number if number >= 0 else None

    def sync(self) -> None:
        self.store.sync()
