"""Per-camera settings (masks, zones, minimum plate width, plate pictures) on the compacted topic
`cameras`: the contract (settings.py), its geometry (geometry.py), files (files.py), records and
store (records.py, store.py), the `stream-worker cameras` commands (commands.py) and the live
follower the worker uses (following.py)."""
