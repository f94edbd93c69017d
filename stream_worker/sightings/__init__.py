"""The `stream-worker sightings` service: one `PlateSighting` per vehicle pass.

consume plates -> group reads per camera -> vote -> publish sightings -> commit.

Pure steps (reads, grouping, voting, direction, commits, engine) have no Kafka in them;
`app.py` wires them to the broker.
"""
