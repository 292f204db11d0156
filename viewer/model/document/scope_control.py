"""Collapsing, expanding and folding module scopes: changes to a graph's
:class:`~viewer.model.scopes.tree.ScopeModel` (``scene.scopes.model``).

Each change returns the status line that names it, or None when nothing changed; an unknown
path raises KeyError (naming the known ones). The Document then builds the scene of the same
trace with the new scopes (:func:`viewer.model.scene.build.rescoped_scene`) and installs it.
Nothing here reads or writes the Document.
"""

from __future__ import annotations

from viewer.model.scopes.tree import ScopeModel

__all__ = [
    "collapse",
    "collapse_siblings",
    "expand",
    "expand_all",
    "fold",
    "reveal",
    "scope_path_of",
    "set_depth",
]


def set_depth(model: ScopeModel, depth: int) -> str:
    model.set_depth(int(depth))
    return f"Depth {int(depth)}"


def expand(model: ScopeModel, path: str) -> str | None:
    """Show the contents of the instances at ``path`` in one call: a folded run holding them
    (or one of their ancestors) unfolds, every box above them opens, and they expand. None
    when they are open already."""
    changed, unfolded = model.expand_instances(model.instances(path))
    if not changed:
        return None
    if unfolded:
        runs = " and ".join(dict.fromkeys(model.run_name(h) for h in unfolded))
        return f"Unfolded the run {runs} and expanded {path}"
    return f"Expanded {path}"


def collapse(model: ScopeModel, path: str) -> str | None:
    """Show the instances at ``path`` as one box each (what :func:`expand` opened closes
    again; a run it unfolded stays unfolded, :func:`fold` folds it). None when they are
    collapsed already."""
    ids = model.instances(path)
    if model.collapsed[ids].all():
        return None
    model.set_collapsed(path, True)
    return f"Collapsed {path}"


def collapse_siblings(model: ScopeModel, path: str) -> str:
    """Collapse every instance beside those at ``path`` (same parent), keeping them."""
    mine = model.instances(path)
    parents = model.parent[mine]
    siblings = [
        s for s in range(1, len(model.rows)) if model.parent[s] in parents and s not in mine
    ]
    model.collapsed[siblings] = True
    return f"Collapsed the siblings of {path}"


def fold(model: ScopeModel, path: str, folded: bool) -> str | None:
    """Fold (or unfold) the run ``path`` belongs to; None when it repeats nothing."""
    model.instances(path)
    heads = model.set_folded(path, folded)
    if not heads:
        return None
    runs = " and ".join(model.run_name(h) for h in heads)
    return f"{'Folded' if folded else 'Unfolded'} the run {runs}"


def expand_all(model: ScopeModel) -> str:
    model.expand_all()
    return "Expanded every module"


def reveal(model: ScopeModel, node_id: int) -> str | None:
    """Expand (and unfold) what hides ``node_id``; None when it is shown already or unknown."""
    try:
        changed = model.reveal(int(node_id))
    except KeyError:
        return None
    return f"Showing node #{int(node_id)}" if changed else None


def scope_path_of(model: ScopeModel, node_id: int) -> str:
    """The path of the scope ``node_id`` ran in ('' outside any; a Parameter: the scope
    of its first consumer)."""
    try:
        s = model.scope_of(int(node_id))
    except KeyError:
        return ""
    local = int(model.local_of_id[int(node_id)])
    if s == 0 and model.is_param[local]:
        uses = model.use_fun[model.use_var == local]
        s = int(model.node_scope[uses[0]]) if len(uses) else 0
    return model.rows[s].path
