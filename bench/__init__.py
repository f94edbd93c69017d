"""Benchmarks of stream_worker (`stream-worker bench`): see main.py and docs/performance.md."""
