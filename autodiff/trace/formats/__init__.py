"""Saved traces: the JSON format (json_io) and the binary .npz the script worker
sends back (npz), read without trusting the file (npz_members)."""
