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
import contextlib
import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
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
    """Writes the batch at HELD_OFFSET `hold_s` late (of every topic), as a preempted broker thread would."""

    def __init__(self, root: Path, hold_s: float = HOLD_S) -> None:
        super().__init__(root)
        self.hold_s = hold_s

    def put(self, name: str, body: bytes, if_match: str | None, if_none_match: str | None) -> str | None:
        if name.endswith(f"/records/{HELD_OFFSET:020}.batch"):
            time.sleep(self.hold_s)
        return super().put(name, body, if_match, if_none_match)


@contextlib.contextmanager
def held_back_broker(hold_s: float = HOLD_S) -> Iterator[str]:
    """A Tansu broker on a HeldBackStore; yields its bootstrap servers (tests use it too)."""
    with tempfile.TemporaryDirectory() as data_dir:
        store = StoreServer(free_port(), HeldBackStore(Path(data_dir), hold_s))
        threading.Thread(target=store.serve_forever, daemon=True).start()
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        command = [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url]
        environment = object_store_environment({}, f"http://127.0.0.1:{store.server_address[1]}")
        try:
            with subprocess.Popen(
                [*command, "--storage-engine", f"s3://{BUCKET}/"],
                env={**environment, "NO_COLOR": "1"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ) as broker:
                try:
                    time.sleep(1.0)
                    yield f"127.0.0.1:{port}"
                finally:
                    broker.kill()
        finally:
            store.shutdown()


def produce_as_two_cameras(bootstrap_servers: str, topic: str, values: list[bytes]) -> dict[int, int]:
    """`values` to partition 0 of `topic`, alternately from two idempotent producers (cameras), 0.3 s
    apart; the one holding the record at HELD_OFFSET does not wait for it. Returns index -> offset."""
    cameras = [Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True}) for _ in "ab"]
    offsets: dict[int, int] = {}

    def delivered(index: int) -> Callable[[object, object], None]:
        def callback(error: object, message: object) -> None:
            if error is None:
                offsets[index] = message.offset()  # type: ignore[attr-defined]

        return callback

    for index, value in enumerate(values):
        camera = cameras[index % 2]
        camera.produce(
            topic,
            value=value,
            key=b"ab"[index % 2 : index % 2 + 1],
            partition=0,
            on_delivery=delivered(index),
        )
        camera.poll(0)
        if index != HELD_OFFSET:  # the held-back record's camera does not wait; the other goes on
            camera.flush(30)
        time.sleep(0.3)
    for camera in cameras:
        camera.flush(30)
    return offsets


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
    produced = produce_as_two_cameras(bootstrap_servers, TOPIC, [str(i).encode() for i in range(RECORDS)])
    offsets = {int(i): offset for i, offset in produced.items()}
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
    with held_back_broker() as bootstrap_servers:
        print(json.dumps(run(bootstrap_servers, consumer_config)))


if __name__ == "__main__":
    main()
