"""Benchmarks of stream_worker (`stream-worker bench`): see main.py and the README's Performance section."""
