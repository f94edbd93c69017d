"""What the project's Kafka services share: settings, client configs, the consumer side (the group
consumer, checked commits, offset-gap healing, stop and revocation deadlines), the producer, HTTP
probes, logs, lifecycle.

`stream-worker run` (stream_worker/worker) and `stream-worker sightings` (stream_worker/sightings)
are both consume -> process -> publish -> commit loops; this package is the plumbing they share.
"""
