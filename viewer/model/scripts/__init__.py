"""A user's script, run in a worker process (process, worker, run), what it sends
back (worker_data) and which passes of a long run are kept (pass_sampling, pass_recording)."""
