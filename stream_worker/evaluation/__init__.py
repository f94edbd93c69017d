"""`stream-worker eval`: score a labelled photo folder through the real Triton pipeline.

labels (read and check labels.json), scoring (pure matching and figures), runner (Triton,
progress, exit codes), report (the table and the JSON report).
"""
