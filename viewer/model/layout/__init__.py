"""The layered layout of a graph: layers by generation or minimum span, virtual nodes, crossing
reduction, coordinates, and the layout of a trace.

Imports point one way: ``compute`` uses ``layered``, the entry point, which runs the phases;
the phases import only the shared modules (``layered_graph``, ``progress``, ``arrays``), never
each other or ``layered``. The package's API, by module:

- ``compute``: a trace's layout: ``compute_layout``, ``GraphLayout``,
  ``layout_from_positions``; the box widths ``variable_box_width``, ``function_box_width``
  and ``WIDTH_SAMPLE`` (how many variables they read).
- ``layered``: the entry points on integer arrays: ``layered_layout``, ``Layout``,
  ``layers_at_least``, ``layout_graph``, ``count_crossings``.
- ``layering``, phase 1: ``min_span_layers``, ``longest_path_layers``, ``checked_layers``,
  ``components``.
- ``layered_graph``, phase 2: ``LayeredGraph``, the virtual nodes and segments that phases 3
  and 4 read.
- ``ordering``, phase 3: ``order_layers``.
- ``placement``, phase 4: ``assign_x``, ``edge_polylines``, ``straight_crossings``.
- ``clusters``: nested clusters (module frames) in phases 1, 3 and 4: ``Clusters``,
  ``ClusterTree``, ``stacked_minimum``, ``cluster_of_items``, ``cluster_ranks``, ``separate``,
  ``frame_extents``; ``layered`` passes its ranks to ``ordering`` as a callable.
- ``progress``: ``Ticker`` (every phase reports through it), ``LayoutCancelled``,
  ``Progress``, ``ShouldCancel``.
- ``arrays``: ``ranges`` and ``inversions``, index-array operations the phases (and the scope
  relayout) share.
"""
