"""Colours of the graph: light and dark palettes as RGBA uint8 tables indexed by state code."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from viewer.model.node_states import STATE_NAMES

__all__ = ["DARK", "LIGHT", "PALETTES", "Palette", "error_colour", "faded"]


def _rgba(hex_colour: str, alpha: int = 255) -> tuple[int, int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), alpha


@dataclass(frozen=True)
class Palette:
    """Colours of the graph. ``variable_fill`` / ``function_fill``: (n_states, 4) uint8,
    row ``state_code(state)``; every state has a visibly different fill, also to a reader with
    deuteranopia or protanopia (CIE76 distance of at least 10 between any two states of a
    kind under the Machado et al. 2009 simulations; a test checks it)."""

    name: str
    background: tuple[int, int, int, int]
    text: tuple[int, int, int, int]
    edge: tuple[int, int, int, int]
    edge_active: tuple[int, int, int, int]
    current: tuple[int, int, int, int]
    selection: tuple[int, int, int, int]
    error: tuple[int, int, int, int]
    variable_fill: NDArray[np.uint8]
    function_fill: NDArray[np.uint8]
    # module boxes (collapsed scopes): not computed, ran forward (value), ran backward (grad)
    module_fill: NDArray[np.uint8] = field(default_factory=lambda: _MODULE_LIGHT)


def _table(colours: Mapping[str, str]) -> NDArray[np.uint8]:
    return np.array([_rgba(colours[name]) for name in STATE_NAMES], dtype=np.uint8)


# A module is violet, apart from the orange variables and the blue functions; its states are
# the steps that ran inside it: none yet, forward, backward.
_MODULE_LIGHT = _table(
    {
        "not_computed": "#efe9fb",
        "value": "#cdbdf2",
        "grad": "#9b7fe0",
        "grad_cleared": "#ddd3f5",
        "freed": "#c9c6d1",
        "constant": "#b3aac6",
        "grad_carried": "#c77dff",
        "grad_previous": "#a99bcc",
    }
)
_MODULE_DARK = _table(
    {
        "not_computed": "#2e2940",
        "value": "#8f7bd1",
        "grad": "#b59cff",
        "grad_cleared": "#4d4470",
        "freed": "#4a4852",
        "constant": "#7d7690",
        "grad_carried": "#9d5cc9",
        "grad_previous": "#8a7fb0",
    }
)


LIGHT = Palette(
    name="light",
    background=_rgba("#fbfbfc"),
    text=_rgba("#1d1f23"),
    edge=_rgba("#8d939e"),
    edge_active=_rgba("#e8590c"),
    current=_rgba("#e8590c"),
    selection=_rgba("#2f6fdb"),
    error=_rgba("#c92a2a"),
    variable_fill=_table(
        {
            "not_computed": "#fdf3e3",
            "value": "#ffc46b",
            "grad": "#ff8f3d",
            "grad_cleared": "#f3dcb0",
            "freed": "#cdcfd3",
            "constant": "#b8b592",
            "grad_carried": "#c77dff",
            "grad_previous": "#cc8266",
        }
    ),
    function_fill=_table(
        {
            "not_computed": "#eaf4f8",
            "value": "#add8e6",
            "grad": "#4582bd",
            "grad_cleared": "#cfe6a8",
            "freed": "#b5b7bb",
            "constant": "#86998e",
            "grad_carried": "#c9a0ea",
            "grad_previous": "#6c8ea6",
        }
    ),
)

DARK = Palette(
    name="dark",
    background=_rgba("#17191c"),
    text=_rgba("#e4e6eb"),
    edge=_rgba("#7b818c"),
    edge_active=_rgba("#ff922b"),
    current=_rgba("#ff922b"),
    selection=_rgba("#74a8ff"),
    error=_rgba("#ff6b6b"),
    variable_fill=_table(
        {
            "not_computed": "#3a332a",
            "value": "#eab04f",
            "grad": "#e0702a",
            "grad_cleared": "#80643c",
            "freed": "#44474d",
            "constant": "#8f8c7a",
            "grad_carried": "#9d5cc9",
            "grad_previous": "#bf9469",
        }
    ),
    function_fill=_table(
        {
            "not_computed": "#26343a",
            "value": "#78b4cc",
            "grad": "#4a8ac4",
            "grad_cleared": "#5f8a4a",
            "freed": "#52555b",
            "constant": "#8e9aa0",
            "grad_carried": "#8a3f86",
            "grad_previous": "#697a8c",
        }
    ),
    module_fill=_MODULE_DARK,
)

PALETTES: dict[str, Palette] = {"light": LIGHT, "dark": DARK}


def error_colour(error: float) -> tuple[int, int, int, int]:
    if not math.isfinite(error) or error >= 1e-3:
        return _rgba("#e03131")
    if error >= 1e-6:
        return _rgba("#f08c00")
    return _rgba("#2f9e44")


DETACHED_FADE = 0.7  # how far a detached node's fill goes toward the background


def faded(fill: NDArray[np.uint8], background: tuple[int, int, int, int]) -> NDArray[np.uint8]:
    """``(n, 4)`` fills greyed toward ``background``: what the view draws for history the
    program cut (unchain_backward) before the graph. The state stays readable: the fills
    are desaturated and lightened (darkened on a dark background), not replaced."""
    rgb = np.asarray(fill, dtype=np.float64)[:, :3]
    grey = rgb @ np.array([0.299, 0.587, 0.114])
    mixed = 0.5 * rgb + 0.5 * grey[:, None]
    back = np.asarray(background[:3], dtype=np.float64)
    out = (1 - DETACHED_FADE) * mixed + DETACHED_FADE * back
    result = np.asarray(fill, dtype=np.uint8).copy()
    result[:, :3] = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    return result
