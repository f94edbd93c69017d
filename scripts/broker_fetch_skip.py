"""Reproduces the local broker's skipped records on demand: a Tansu fault, not a client setting.

Tansu stores a produced batch in two steps: it reserves the offsets (the partition's watermark),
then writes the batch. A fetch returns the stored batches at or after the requested offset, with no
check that the first one starts there. When two producers write to one partition at once and the
later reservation is written first, a consumer waiting at the end of the partition gets the later
batch, moves past it, and never asks for the earlier one, which is stored a moment later: it is
skipped, and it is there when the partition is read again from the start.

Live, the window is the time between the two steps, which is tiny unless the broker's thread is
preempted (a loaded machine). Here the broker runs on the object store of `--durable` with one
batch write held back, so the window is seconds wide and the outcome is the same every time. Run it
with the consumer settings to compare (each `-X key=value` is passed to the consumer):

    python scripts/broker_fetch_skip.py
    python scripts/broker_fetch_skip.py -X isolation.level=read_uncommitted -X fetch.wait.max.ms=500
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from stream_worker.launchers.broker import (
    BUCKET,
    create_topics,
    free_port,
    object_store_environment,
    tansu_binary,
)
from stream_worker.launchers.objectstore import ObjectStore, StoreServer

TOPIC = "frames"
HELD_OFFSET = 3  # the batch whose write is held back
HOLD_S = 3.0
RECORDS = 8


class HeldBackStore(ObjectStore):
    """Writes the batch at HELD_OFFSET HOLD_S late, as a preempted broker thread would."""

    def put(self, name: str, body: bytes, if_match: str | None, if_none_match: str | None) -> str | None:
        if name.endswith(f"/records/{HELD_OFFSET:020}.batch"):
            time.sleep(HOLD_S)
        return super().put(name, body, if_match, if_none_match)


def run(bootstrap_servers: str, consumer_config: dict[str, str]) -> dict[str, object]:
    create_topics(bootstrap_servers, [TOPIC], partitions=1)
    seen: list[int] = []
    done = threading.Event()

    def consume() -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "live", **consumer_config})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        while not done.is_set():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                seen.append(message.offset())
        consumer.close()

    reader = threading.Thread(target=consume)
    reader.start()
    # Two cameras, each with its own idempotent producer, as `stream-worker produce` runs them.
    cameras = [Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True}) for _ in "ab"]
    offsets: dict[int, int] = {}  # record -> offset

    def delivered(error: object, message: object) -> None:
        offsets[int(message.value())] = message.offset()  # type: ignore[attr-defined]

    for record in range(RECORDS):
        camera = cameras[record % 2]
        camera.produce(TOPIC, value=str(record), on_delivery=delivered)
        camera.poll(0)
        if record != HELD_OFFSET:  # the held-back record's camera does not wait; the other goes on
            camera.flush(30)
        time.sleep(0.3)
    for camera in cameras:
        camera.flush(30)
    time.sleep(2.0)
    done.set()
    reader.join()
    again = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "again"})
    again.assign([TopicPartition(TOPIC, 0, 0)])
    stored: list[int] = []
    deadline = time.monotonic() + 10
    while len(stored) < len(offsets) and time.monotonic() < deadline:
        message = again.poll(0.2)
        if message is not None and message.error() is None:
            stored.append(message.offset())
    again.close()
    return {
        "consumer_config": consumer_config,
        "produced_at_offsets": sorted(offsets.values()),
        "read_live": sorted(set(seen)),
        "skipped_live": sorted(set(offsets.values()) - set(seen)),
        "read_again_from_the_start": sorted(set(stored)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-X", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    arguments = parser.parse_args()
    consumer_config = dict(setting.split("=", 1) for setting in arguments.settings)
    with tempfile.TemporaryDirectory() as data_dir:
        store = StoreServer(free_port(), HeldBackStore(Path(data_dir)))
        threading.Thread(target=store.serve_forever, daemon=True).start()
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        command = [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url]
        environment = object_store_environment({}, f"http://127.0.0.1:{store.server_address[1]}")
        with subprocess.Popen(
            [*command, "--storage-engine", f"s3://{BUCKET}/"],
            env={**environment, "NO_COLOR": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as broker:
            try:
                time.sleep(1.0)
                print(json.dumps(run(f"127.0.0.1:{port}", consumer_config)))
            finally:
                broker.kill()
        store.shutdown()


if __name__ == "__main__":
    main()
