"""Threads for the Document's work: jobs on plain threads reporting to the GUI thread
(jobs), and the runner that runs the Document's work on them (runner)."""
