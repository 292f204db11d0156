"""The typed expression language: parsed with ``ast`` against a whitelist (rules,
constants, check) and run by an interpreter that records the graph (program, interpreter)."""
