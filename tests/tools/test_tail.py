"""`stream-worker tail`: events as JSON, dead letters as key, headers and payload size."""

from __future__ import annotations

import base64

import orjson
import pytest
from confluent_kafka import Producer
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.launchers.broker import create_topics
from stream_worker.tools.tail import plate_images

runner = CliRunner()

DEAD_LETTER_HEADERS = {
    "camera_id": "cam-9",
    "frame_id": "cam-9-41",
    "error.stage": "decode",
    "error.reason": "invalid_image",
    "source.topic": "frames",
    "source.partition": "2",
    "source.offset": "41",
}
EVENT = {"camera_id": "cam-9", "frame_id": "cam-9-42", "plates": [{"text": "B840CK197", "confidence": 0.91,
         "box": {"x1": 10.2, "y1": 20.0, "x2": 110.0, "y2": 45.6}}]}  # fmt: skip
GARBAGE = b"\xff\xd8 not really a jpeg"


@pytest.fixture
def mixed_topic(kafka_bootstrap: str, unique_name: str) -> str:
    """A dead-letter-like record (binary value, error headers), then a JSON event, same key."""
    create_topics(kafka_bootstrap, [unique_name], partitions=3)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    headers = [(name, value.encode()) for name, value in DEAD_LETTER_HEADERS.items()]
    # A flush after each record: Tansu puts the end of a partition at the last batch's first offset
    # + 1, so the records of one batch would count as "new" for a tail that starts at the end.
    producer.produce(unique_name, key=b"cam-9", value=GARBAGE, headers=headers)
    assert producer.flush(30) == 0
    producer.produce(unique_name, key=b"cam-9", value=orjson.dumps(EVENT))
    assert producer.flush(30) == 0
    return unique_name


def _tail(kafka_bootstrap: str, topic: str, *options: str):
    args = ["tail", "--topic", topic, "--bootstrap-servers", kafka_bootstrap, *options]
    return runner.invoke(app, args)


@pytest.mark.integration
def test_tail_json_prints_dead_letters_without_payload_and_events_as_they_are(
    kafka_bootstrap: str, mixed_topic: str
) -> None:
    result = _tail(kafka_bootstrap, mixed_topic, "--from-beginning", "--max-messages", "2", "--json")
    assert result.exit_code == 0, result.output
    dead_letter, event = (orjson.loads(line) for line in result.stdout.splitlines())
    assert dead_letter["key"] == "cam-9"
    assert dead_letter["headers"] == DEAD_LETTER_HEADERS
    assert dead_letter["payload_bytes"] == len(GARBAGE)
    assert "value" not in dead_letter and "not really" not in result.stdout
    assert event == EVENT


@pytest.mark.integration
def test_tail_human_output_summarises_both(kafka_bootstrap: str, mixed_topic: str) -> None:
    result = _tail(kafka_bootstrap, mixed_topic, "--from-beginning", "--max-messages", "2")
    assert result.exit_code == 0, result.output
    dead_letter, event = result.stdout.splitlines()
    assert f"key=cam-9 {len(GARBAGE)} bytes" in dead_letter
    assert "error.reason=invalid_image" in dead_letter and "source.offset=41" in dead_letter
    assert "frame=cam-9-42 B840CK197 (0.91) at 10,20,110,46" in event


@pytest.mark.integration
def test_tail_exits_after_idle_timeout_and_skips_old_records_by_default(
    kafka_bootstrap: str, mixed_topic: str
) -> None:
    result = _tail(kafka_bootstrap, mixed_topic, "--idle-timeout", "3", "--json")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


@pytest.mark.integration
def test_tail_of_a_missing_topic_exits_2(kafka_bootstrap: str, unique_name: str) -> None:
    result = _tail(kafka_bootstrap, unique_name, "--idle-timeout", "1")
    assert result.exit_code == 2
    assert unique_name in result.stderr


@pytest.mark.parametrize("command", ["broker", "produce", "tail"])
def test_help_works_without_servers(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage" in result.stdout


JPEG = b"\xff\xd8\xff\xe0 plate picture"
PICTURED_EVENT = {
    "event_id": "ef6022d2-5938-5d05-b4a8-9ee21c6e8514",
    "plates": [
        {"text": "B840CK197", "image": base64.b64encode(JPEG).decode()},
        {"text": "A123BC77"},  # no picture
        {"text": "K456MH199", "image": base64.b64encode(JPEG[::-1]).decode()},
    ],
}
PICTURED_SIGHTING = {
    "sighting_id": "../7d3c",
    "best_read": {"text": "B840CK197", "image": base64.b64encode(JPEG).decode()},
}


def test_plate_pictures_are_named_after_their_event_or_sighting() -> None:
    assert plate_images({"value": PICTURED_EVENT}) == [
        ("ef6022d2-5938-5d05-b4a8-9ee21c6e8514-0.jpg", JPEG),
        ("ef6022d2-5938-5d05-b4a8-9ee21c6e8514-2.jpg", JPEG[::-1]),
    ]
    # An id off a topic never leaves the directory.
    assert plate_images({"value": PICTURED_SIGHTING}) == [("_7d3c.jpg", JPEG)]
    assert plate_images({"value": {**PICTURED_SIGHTING, "best_read": {"image": "not base64!"}}}) == []
    assert plate_images({"value": EVENT}) == plate_images({"headers": {}, "payload_bytes": 3}) == []


@pytest.mark.integration
def test_tail_writes_the_plate_pictures_of_events_and_sightings(
    kafka_bootstrap: str, unique_name: str, tmp_path
) -> None:
    create_topics(kafka_bootstrap, [unique_name], partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for value in (PICTURED_EVENT, PICTURED_SIGHTING, EVENT):
        producer.produce(unique_name, key=b"cam-9", value=orjson.dumps(value))
        assert producer.flush(30) == 0
    directory = tmp_path / "pictures" / "new"
    result = _tail(
        kafka_bootstrap,
        unique_name,
        "--from-beginning",
        "--max-messages",
        "3",
        "--json",
        "--plate-images",
        str(directory),
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in directory.iterdir()) == [
        "_7d3c.jpg",
        "ef6022d2-5938-5d05-b4a8-9ee21c6e8514-0.jpg",
        "ef6022d2-5938-5d05-b4a8-9ee21c6e8514-2.jpg",
    ]
    assert (directory / "_7d3c.jpg").read_bytes() == JPEG
    assert f"wrote {directory / '_7d3c.jpg'}" in result.stderr
    assert [orjson.loads(line) for line in result.stdout.splitlines()] == [
        PICTURED_EVENT,
        PICTURED_SIGHTING,
        EVENT,
    ]
