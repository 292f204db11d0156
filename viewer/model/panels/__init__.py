"""The Qt-free data behind the panels: the inspector, find, the overview, the
legend and the plots."""
