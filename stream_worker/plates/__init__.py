"""Pure logic on plate texts that several services share (sightings, alerts, evaluation, the
store): text distances and matching against watch-list entries. No I/O; imports only the contracts."""
