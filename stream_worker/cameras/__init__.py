"""Per-camera settings (masks, zones, minimum plate width, plate pictures) on the compacted topic
`cameras`, as the services above this package use them: the contract itself is
`stream_worker.contracts.cameras`; here are its geometry (geometry.py), files (files.py), records and
store (records.py, store.py), the `stream-worker cameras` commands (cli.py, commands.py) and the live
follower that services use (following.py)."""
