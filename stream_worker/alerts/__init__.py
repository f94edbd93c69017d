"""Watch lists and alerts (issue 20): the `watchlist` compacted topic, its store and the plate matcher.

Kept free of heavy imports: `stream_worker.contracts` imports `watchlist` to register its schema.
"""
