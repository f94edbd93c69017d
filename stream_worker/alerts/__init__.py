"""The alerts service: reads plate events and sightings, publishes a PlateAlert when a
watch-listed plate passes. The watch list's contract is `stream_worker.contracts.watchlist`; the
matcher, shared with other services, is `stream_worker.plates.matching`."""
