"""`stream-worker produce`: frames land on the topic with the input contract's key and headers."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import orjson
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.ports import free_port
from stream_worker.tools.produce import iter_frames, produce_frames

runner = CliRunner()


def _read_values(bootstrap_servers: str, topic: str, count: int) -> list[bytes]:
    """The raw values of the first `count` records of partition-spanning `topic` (any order)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap_servers, "group.id": topic, "enable.auto.commit": False}
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    values: list[bytes] = []
    try:
        for _ in range(600):  # polls of up to 0.5 s; a generous bound, not a timing assertion
            if len(values) == count:
                break
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def _tail_json(bootstrap_servers: str, topic: str) -> list[dict]:
    """Everything on `topic`, through `stream-worker tail --json` (exits once the topic is idle)."""
    args = ["tail", "--topic", topic, "--bootstrap-servers", bootstrap_servers, "--from-beginning"]
    result = runner.invoke(app, [*args, "--json", "--idle-timeout", "10"])
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def photo_folder(tmp_path: Path, car_jpeg: bytes, cat_jpeg: bytes) -> Path:
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "b_cat.jpeg").write_bytes(cat_jpeg)
    (folder / "a_car.jpg").write_bytes(car_jpeg)
    (folder / "notes.txt").write_text("not a frame")
    return folder


def test_folder_gives_its_jpegs_in_name_order_and_warns_about_the_rest(
    photo_folder: Path, car_jpeg: bytes, cat_jpeg: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        frames = list(iter_frames([photo_folder], camera_id="cam", repeat=2))
    assert frames == [("cam-0", car_jpeg), ("cam-1", cat_jpeg), ("cam-2", car_jpeg), ("cam-3", cat_jpeg)]
    assert "notes.txt" in caplog.text


@pytest.mark.integration
def test_produce_folder_then_tail_reads_back_exactly_those_frames(
    kafka_bootstrap: str, unique_name: str, photo_folder: Path, car_jpeg: bytes, cat_jpeg: bytes
) -> None:
    create_topics(kafka_bootstrap, [unique_name], partitions=3)
    args = ["produce", str(photo_folder), "--camera-id", "gate-7", "--repeat", "3"]
    result = runner.invoke(app, [*args, "--topic", unique_name, "--bootstrap-servers", kafka_bootstrap])
    assert result.exit_code == 0, result.output
    assert f"sent 6 frames ({3 * (len(car_jpeg) + len(cat_jpeg))} bytes)" in result.stdout

    records = _tail_json(kafka_bootstrap, unique_name)
    assert len(records) == 6
    assert {record["key"] for record in records} == {"gate-7"}
    assert [record["headers"]["frame_id"] for record in records] == [f"gate-7-{i}" for i in range(6)]
    assert [record["payload_bytes"] for record in records] == [len(car_jpeg), len(cat_jpeg)] * 3
    for record in records:
        assert record["headers"]["camera_id"] == "gate-7"
        assert datetime.fromisoformat(record["headers"]["captured_at"]).utcoffset() == UTC.utcoffset(None)


@pytest.mark.integration
def test_produce_video_sends_each_frame_as_a_jpeg(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    video = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (64, 48))
    for shade in range(5):
        writer.write(np.full((48, 64, 3), shade * 50, dtype=np.uint8))
    writer.release()
    create_topics(kafka_bootstrap, [unique_name], partitions=3)

    report = produce_frames(
        iter_frames([video], camera_id="cam-v"),
        bootstrap_servers=kafka_bootstrap,
        topic=unique_name,
        camera_id="cam-v",
    )

    assert (report.sent, report.failed) == (5, 0)
    values = _read_values(kafka_bootstrap, unique_name, 5)
    assert len(values) == 5
    shades = sorted(
        int(cv2.imdecode(np.frombuffer(v, np.uint8), cv2.IMREAD_GRAYSCALE).mean()) for v in values
    )
    assert shades == pytest.approx([0, 50, 100, 150, 200], abs=3)


def test_produce_exits_1_when_frames_are_not_delivered(car_jpeg: bytes, tmp_path: Path) -> None:
    photo = tmp_path / "car.jpg"
    photo.write_bytes(car_jpeg)
    nobody_listens = f"127.0.0.1:{free_port()}"
    args = ["produce", str(photo), "--camera-id", "c", "--bootstrap-servers", nobody_listens]
    result = runner.invoke(app, [*args, "-X", "message.timeout.ms=1000"])
    assert result.exit_code == 1
    assert "sent 0 frames" in result.stdout and "1 failed" in result.stdout


@pytest.mark.parametrize("make_path", [lambda d: d / "missing.jpg", lambda d: d / "notes.txt"])
def test_produce_rejects_a_path_that_holds_no_frames(tmp_path: Path, make_path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    result = runner.invoke(app, ["produce", str(make_path(tmp_path)), "--camera-id", "c"])
    assert result.exit_code == 2
    assert str(make_path(tmp_path)) in result.stderr
