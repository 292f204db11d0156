"""Work off the GUI thread: jobs on plain threads reporting to the GUI thread
(jobs), and the layout's and a typed program's runners."""
