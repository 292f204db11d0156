"""The frames of the scopes drawn open: where a module's nodes begin and end once it is
expanded. Each is the rectangle around its nodes and the frames nested in it, padded, with a
strip on top for its title, so nested frames nest."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from viewer.model.scene.geometry import ScopeFrame
from viewer.model.scopes.tree import VisibleGraph

__all__ = ["FRAME_PAD", "FRAME_TITLE_HEIGHT", "frame_title", "scope_frames"]

FRAME_PAD = 0.08  # layout units between a frame and what it holds
FRAME_TITLE_HEIGHT = 0.24  # the title's strip, above the pad


def frame_title(name: str, cls: str) -> str:
    """'b0 · Block'; the name alone when there is no class or it is the class ('MLP')."""
    return f"{name} \N{MIDDLE DOT} {cls}" if cls and cls != name else name


def scope_frames(
    positions: NDArray[np.float64], half_sizes: NDArray[np.float64], vis: VisibleGraph
) -> tuple[ScopeFrame, ...]:
    """A frame per open scope that holds a node of ``vis`` (laid out at ``positions``, boxes
    ``half_sizes``), outermost first."""
    model = vis.model
    n_scopes = len(model.rows)
    owner = model.frame_owners(vis)
    held = owner > 0
    if not held.any():
        return ()
    lo = np.full((n_scopes, 2), np.inf)
    hi = np.full((n_scopes, 2), -np.inf)
    np.minimum.at(lo, owner[held], (positions - half_sizes)[held])
    np.maximum.at(hi, owner[held], (positions + half_sizes)[held])
    drawn = np.flatnonzero(model.drawn_open())
    frames: list[ScopeFrame] = []
    # innermost first, so each frame is final before its parent takes it in
    for s in drawn[np.argsort(-model.depth[drawn], kind="stable")].tolist():
        if not np.isfinite(lo[s, 0]):
            continue  # nothing of it is shown (its nodes all outside this graph)
        x0 = lo[s, 0] - FRAME_PAD
        y0 = lo[s, 1] - FRAME_PAD - FRAME_TITLE_HEIGHT
        x1, y1 = hi[s, 0] + FRAME_PAD, hi[s, 1] + FRAME_PAD
        row = model.rows[s]
        frames.append(
            ScopeFrame(
                scope_id=s,
                path=row.path,
                title=frame_title(row.name, row.cls),
                depth=int(model.depth[s]),
                rect=(float(x0), float(y0), float(x1), float(y1)),
                title_height=FRAME_TITLE_HEIGHT,
            )
        )
        p = int(model.parent[s])
        if p > 0:
            lo[p] = np.minimum(lo[p], (x0, y0))
            hi[p] = np.maximum(hi[p], (x1, y1))
    frames.sort(key=lambda f: (f.depth, f.scope_id))
    return tuple(frames)
