"""Saved traces: the JSON format (json_io) and the binary .npz the script worker
sends back (npz), read without trusting the file (npz_members); what both share (common).
They never import the Trace: a loader returns filled tables, which ``Trace(tables=...)`` reads."""
