"""Pure logic on plate texts that several services share (sightings, alerts, evaluation, the
store, the worker): text distances, matching against watch-list entries, and reading a recognizer's
probabilities through a region's plate formats. No I/O; imports only the contracts (and numpy)."""
