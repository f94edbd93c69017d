"""Which stored record batches retention deletes (pure logic; the broker test checks it for real)."""

from __future__ import annotations

from pathlib import Path

import orjson

from stream_worker.launchers.retention import Batch, Retention, expired, read_retentions, topic_retention

SECOND_NS = 1_000_000_000
PREFIX = "tansu/clusters/c/topics"


def _batches(topic: str, partition: int, ages_s: list[int], now_ns: int, size: int = 100) -> list[Batch]:
    return [
        Batch(
            f"{PREFIX}/{topic}/partitions/{partition:010d}/records/{index:020d}.batch",
            now_ns - age * SECOND_NS,
            size,
        )
        for index, age in enumerate(ages_s)
    ]


def test_batches_older_than_retention_ms_go_but_never_a_partitions_newest() -> None:
    now = 1000 * SECOND_NS
    retentions = {("tansu/clusters/c", "frames"): Retention(60_000, None)}
    young = _batches("frames", 0, [300, 200, 30, 10], now)
    old = _batches("frames", 1, [300, 200], now)
    assert expired([*young, *old], retentions, now) == [young[0].name, young[1].name, old[0].name]


def test_the_oldest_batches_go_while_a_partition_is_over_retention_bytes() -> None:
    now = 1000 * SECOND_NS
    batches = _batches("plates", 0, [5, 4, 3, 2, 1], now, size=100)
    assert expired(batches, {("tansu/clusters/c", "plates"): Retention(-1, 250)}, now) == [
        b.name for b in batches[:3]
    ]


def test_topics_without_retention_and_other_objects_are_left_alone() -> None:
    now = 1000 * SECOND_NS
    batches = [*_batches("kept", 0, [500, 400], now), Batch("tansu/clusters/c/meta.json", 0, 10)]
    assert expired(batches, {("tansu/clusters/c", "frames"): Retention(1, 1)}, now) == []


def test_a_compacted_topic_that_also_deletes_is_trimmed_by_its_retention() -> None:
    for policy in ("compact,delete", "delete,compact", "[compact, delete]"):
        configs = [{"name": "cleanup.policy", "value": policy}, {"name": "retention.ms", "value": "60000"}]
        assert topic_retention(configs) == Retention(60000, None), policy


def test_compacted_or_unbounded_topics_have_no_retention() -> None:
    assert (
        topic_retention(
            [{"name": "cleanup.policy", "value": "compact"}, {"name": "retention.ms", "value": "1"}]
        )
        is None
    )
    assert topic_retention([{"name": "retention.ms", "value": "-1"}]) is None
    assert topic_retention([]) is None
    assert topic_retention([{"name": "retention.bytes", "value": "9"}]) == Retention(None, 9)


def test_retentions_come_from_tansus_meta_json(tmp_path: Path) -> None:
    meta = tmp_path / "tansu" / "clusters" / "c" / "meta.json"
    meta.parent.mkdir(parents=True)
    topics = {
        "frames": {"topic": {"name": "frames", "configs": [{"name": "retention.ms", "value": "3600000"}]}},
        "watchlist": {
            "topic": {"name": "watchlist", "configs": [{"name": "cleanup.policy", "value": "compact"}]}
        },
    }
    meta.write_bytes(orjson.dumps({"producers": {}, "topics": topics}))
    assert read_retentions(tmp_path) == {("tansu/clusters/c", "frames"): Retention(3_600_000, None)}
