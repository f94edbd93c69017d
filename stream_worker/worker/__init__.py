"""The `stream-worker run` pipeline.

consume -> validate -> batch -> infer -> build event -> publish -> commit.

One module per step; `app.py` wires them together.
"""
