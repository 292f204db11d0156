"""The layered layout of a graph: layers by generation (layering), crossing
reduction (ordering), coordinates (placement), and the entry point (compute)."""
