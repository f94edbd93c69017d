"""Command-line tools around the worker: publish frames, read topics."""
