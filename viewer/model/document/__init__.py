"""The Document (what is open: a typed program, a saved trace or a script's
run) and what loads into it: expressions, files, scripts, examples, the playback cursor."""
