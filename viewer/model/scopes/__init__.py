"""Module boxes: the scope tree with its folds (tree) and the relayout of a graph
with boxes collapsed (relayout)."""
