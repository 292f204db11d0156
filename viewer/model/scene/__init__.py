"""What the graph view draws: the Scene's arrays (scene), their geometry, text,
colours and overlays, and hit tests."""
