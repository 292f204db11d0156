"""The central graph view: its items, the overview, the find bar, the bindings of
the scene, scopes and NaN marks, and the image export (with the headless one)."""
