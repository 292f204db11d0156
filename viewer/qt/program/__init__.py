"""The program the user types or opens: the editor, the variables table, the
example library, each beside its binder."""
