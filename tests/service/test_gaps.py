"""Offset gaps (service/gaps.py and its Kafka side in service/kafka.py): detection, bounded
healing, acceptance, partition ownership, and the filtering and seeks of a polled batch.

Pure logic with a fake clock; the Kafka side with a fake consumer (no broker).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka_fakes import FakeConsumer, FakeMessage

from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer, GapOutcome, SettledGap, Verdict
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.sightings.metrics import SightingsMetrics
from stream_worker.worker.metrics import Metrics

P0, P1 = ("frames", 0), ("frames", 1)
DELIVER, DROP, HEAL = Verdict.DELIVER, Verdict.DROP, Verdict.HEAL


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settled() -> list[SettledGap]:
    return []


@pytest.fixture
def healer(clock: FakeClock, settled: list[SettledGap]) -> GapHealer:
    healer = GapHealer(max_tries=3, max_seconds=2.0, clock=clock, on_settled=settled.append)
    healer.assign([P0, P1])
    return healer


def admit_all(healer: GapHealer, partition: tuple[str, int], offsets: list[int]) -> list[Verdict]:
    return [healer.admit(partition, offset) for offset in offsets]


def seek(healer: GapHealer) -> dict[tuple[str, int], int]:
    """What the Kafka side does after a poll: make the seeks due, all accepted."""
    due = healer.seeks()
    for partition in due:
        healer.seeked(partition)
    return due


def open_gap(healer: GapHealer, partition: tuple[str, int] = P0) -> None:
    """0, 1, 2 delivered, then 5: a gap of 3..4, its first seek made."""
    assert admit_all(healer, partition, [0, 1, 2, 5]) == [DELIVER, DELIVER, DELIVER, HEAL]
    assert seek(healer) == {partition: 3}


# --- in order ----------------------------------------------------------------------------


def test_a_stream_without_gaps_is_delivered_with_no_seek_and_nothing_counted(
    healer: GapHealer, settled: list[SettledGap]
) -> None:
    assert admit_all(healer, P0, list(range(50))) == [DELIVER] * 50
    assert healer.seeks() == {}
    assert healer.expected(P0) == 50
    assert healer.healing() == []
    assert settled == [] and not healer.counts


def test_the_first_record_after_assignment_sets_the_expected_offset(healer: GapHealer) -> None:
    assert healer.expected(P0) is None
    assert healer.admit(P0, 42) is DELIVER
    assert healer.expected(P0) == 43


def test_a_known_start_position_makes_the_first_record_beyond_it_a_gap(clock: FakeClock) -> None:
    healer = GapHealer(clock=clock)
    healer.assign([P0], {P0: 10})
    assert healer.expected(P0) == 10
    assert healer.admit(P0, 12) is HEAL
    assert healer.seeks() == {P0: 10}


def test_a_first_record_before_the_known_start_is_taken_as_the_start(clock: FakeClock) -> None:
    # The committed position was out of range and the consumer reset: follow it, drop nothing.
    healer = GapHealer(clock=clock)
    healer.assign([P0], {P0: 500})
    assert admit_all(healer, P0, [0, 1, 2]) == [DELIVER] * 3
    assert healer.expected(P0) == 3


def test_a_negative_known_position_means_unknown(clock: FakeClock) -> None:
    healer = GapHealer(clock=clock)
    healer.assign([P0], {P0: -1001})  # librdkafka's OFFSET_INVALID
    assert healer.expected(P0) is None


def test_records_of_partitions_not_assigned_pass_untouched(healer: GapHealer) -> None:
    other = ("other", 0)
    assert admit_all(healer, other, [7, 3, 100]) == [DELIVER] * 3
    assert healer.expected(other) is None and healer.seeks() == {}


def test_bounds_cannot_be_negative() -> None:
    with pytest.raises(ValueError):
        GapHealer(max_tries=-1)
    with pytest.raises(ValueError):
        GapHealer(max_seconds=-0.1)


# --- duplicates --------------------------------------------------------------------------


def test_records_already_delivered_are_dropped(healer: GapHealer) -> None:
    admit_all(healer, P0, [0, 1, 2, 3])
    # a client re-delivery (after a pause/resume) of what was delivered
    assert admit_all(healer, P0, [2, 3, 4]) == [DROP, DROP, DELIVER]


def test_records_before_the_expected_offset_after_a_seek_are_dropped(
    healer: GapHealer, settled: list[SettledGap]
) -> None:
    open_gap(healer)
    assert admit_all(healer, P0, [1, 2]) == [DROP, DROP]
    assert healer.healing() == [P0]  # the gap is still open: a duplicate is no answer
    assert admit_all(healer, P0, [3, 4, 5]) == [DELIVER] * 3
    assert [g.outcome for g in settled] == [GapOutcome.HEALED]


# --- healing -----------------------------------------------------------------------------


def test_a_gap_healed_on_the_first_try(
    healer: GapHealer, clock: FakeClock, settled: list[SettledGap]
) -> None:
    open_gap(healer)
    assert healer.expected(P0) == 3  # nothing past the gap delivered
    clock.advance(0.01)
    assert admit_all(healer, P0, [3, 4, 5, 6]) == [DELIVER] * 4
    assert settled == [SettledGap(P0, 3, 4, GapOutcome.HEALED, tries=1, seconds=0.01)]
    assert healer.counts == {("frames", GapOutcome.HEALED): 1}
    assert healer.seeks() == {} and healer.healing() == []


def test_a_gap_healed_on_the_second_try(
    healer: GapHealer, clock: FakeClock, settled: list[SettledGap]
) -> None:
    open_gap(healer)
    clock.advance(0.005)
    assert healer.admit(P0, 5) is HEAL  # the broker answers with the same later record
    assert healer.admit(P0, 6) is HEAL  # the fetch goes on past it: skipped, read again later
    assert healer.seeks() == {}  # the next try waits a while: the batch is being stored
    clock.advance(healer.retry_interval_s)
    assert seek(healer) == {P0: 3}
    assert admit_all(healer, P0, [3, 4, 5, 6]) == [DELIVER] * 4
    [gap] = settled
    assert (gap.outcome, gap.tries, gap.missing_from, gap.missing_to) == (GapOutcome.HEALED, 2, 3, 4)


def test_tries_are_spread_over_the_time_bound(healer: GapHealer, clock: FakeClock) -> None:
    assert healer.retry_interval_s == pytest.approx(2.0 / 3)
    open_gap(healer)
    healer.admit(P0, 5)
    clock.advance(0.6)
    assert healer.seeks() == {}
    clock.advance(0.1)
    assert healer.seeks() == {P0: 3}


def test_no_seek_is_due_while_the_answer_to_the_last_one_is_awaited(
    healer: GapHealer, clock: FakeClock
) -> None:
    open_gap(healer)
    clock.advance(10)
    assert healer.seeks() == {}


def test_retries_are_driven_by_time_even_when_no_record_comes(healer: GapHealer, clock: FakeClock) -> None:
    # The gap's answer was the partition's last record: no further record would trigger a try.
    open_gap(healer)
    assert healer.admit(P0, 5) is HEAL
    clock.advance(1.0)
    assert healer.seeks() == {P0: 3}


def test_a_gap_still_there_after_the_tries_is_accepted(
    healer: GapHealer, clock: FakeClock, settled: list[SettledGap]
) -> None:
    open_gap(healer)  # try 1
    for _ in range(2):  # tries 2 and 3
        assert healer.admit(P0, 5) is HEAL
        clock.advance(healer.retry_interval_s)
        assert seek(healer) == {P0: 3}
    assert healer.admit(P0, 5) is DELIVER  # the answer to the last try
    assert healer.expected(P0) == 6
    assert admit_all(healer, P0, [6, 7]) == [DELIVER, DELIVER]
    [gap] = settled
    assert (gap.outcome, gap.tries, gap.missing_from, gap.missing_to) == (GapOutcome.ACCEPTED, 3, 3, 4)
    assert healer.counts == {("frames", GapOutcome.ACCEPTED): 1}
    assert healer.seeks() == {} and healer.healing() == []


def test_a_gap_still_there_after_the_time_bound_is_accepted(
    clock: FakeClock, settled: list[SettledGap]
) -> None:
    healer = GapHealer(max_tries=10, max_seconds=2.0, clock=clock, on_settled=settled.append)
    healer.assign([P0])
    open_gap(healer)
    clock.advance(2.5)  # a slow answer
    assert healer.admit(P0, 5) is DELIVER
    [gap] = settled
    assert (gap.outcome, gap.tries, gap.seconds) == (GapOutcome.ACCEPTED, 1, 2.5)


def test_a_last_try_is_made_at_the_time_bound_before_accepting(clock: FakeClock) -> None:
    # The answer came early and later records were skipped: accepting one of them would lose
    # those skipped in between, so the partition is read again from the gap first.
    healer = GapHealer(max_tries=2, max_seconds=2.0, clock=clock)
    healer.assign([P0])
    open_gap(healer)
    assert admit_all(healer, P0, [5, 6, 7]) == [HEAL] * 3
    clock.advance(2.0)
    assert healer.admit(P0, 8) is HEAL  # not an answer to a seek: not accepted
    assert seek(healer) == {P0: 3}
    assert healer.admit(P0, 5) is DELIVER
    assert healer.expected(P0) == 6


def test_an_answer_that_heals_part_of_a_gap_leaves_a_new_gap(
    healer: GapHealer, clock: FakeClock, settled: list[SettledGap]
) -> None:
    open_gap(healer)  # 3..4 missing
    assert admit_all(healer, P0, [3, 5]) == [DELIVER, HEAL]  # 3 is back, 4 not yet
    assert [(g.outcome, g.missing_from, g.missing_to) for g in settled] == [(GapOutcome.HEALED, 3, 4)]
    assert seek(healer) == {P0: 4}


def test_a_record_far_beyond_reports_the_whole_missing_range(
    healer: GapHealer, clock: FakeClock, settled: list[SettledGap]
) -> None:
    admit_all(healer, P0, [10])
    assert healer.admit(P0, 25) is HEAL
    assert seek(healer) == {P0: 11}
    for _ in range(2):
        healer.admit(P0, 25)
        clock.advance(1.0)
        seek(healer)
    assert healer.admit(P0, 25) is DELIVER
    [gap] = settled
    assert (gap.missing_from, gap.missing_to, gap.outcome) == (11, 24, GapOutcome.ACCEPTED)


def test_detection_only_accepts_at_once_with_no_seek(clock: FakeClock, settled: list[SettledGap]) -> None:
    healer = GapHealer(max_tries=0, clock=clock, on_settled=settled.append)
    healer.assign([P0])
    assert admit_all(healer, P0, [0, 3, 4]) == [DELIVER] * 3
    assert healer.seeks() == {}
    assert [(g.outcome, g.tries, g.missing_from, g.missing_to) for g in settled] == [
        (GapOutcome.ACCEPTED, 0, 1, 2)
    ]


def test_a_refused_seek_is_due_again_and_the_gap_accepted_after_the_time_bound(
    healer: GapHealer, clock: FakeClock, settled: list[SettledGap]
) -> None:
    admit_all(healer, P0, [0, 1, 2])
    assert healer.admit(P0, 5) is HEAL
    assert healer.seeks() == {P0: 3}
    healer.seek_refused(P0)
    assert healer.seeks() == {P0: 3}  # due again at the next poll
    assert healer.admit(P0, 6) is HEAL  # the fetch went on
    clock.advance(2.0)
    healer.seek_refused(P0)
    assert healer.admit(P0, 7) is DELIVER  # no stall: accepted
    [gap] = settled
    assert (gap.outcome, gap.tries, gap.missing_from, gap.missing_to) == (GapOutcome.ACCEPTED, 0, 3, 6)


def test_seek_reports_for_partitions_without_a_gap_are_ignored(healer: GapHealer) -> None:
    healer.seeked(P0)
    healer.seek_refused(P1)
    healer.seeked(("other", 3))
    assert admit_all(healer, P0, [0, 1]) == [DELIVER, DELIVER]


def test_each_gap_is_logged_once_with_its_partition_and_missing_range(
    healer: GapHealer, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="stream_worker.service.gaps")
    open_gap(healer)
    for _ in range(2):
        healer.admit(P0, 5)
        clock.advance(1.0)
        seek(healer)
    healer.admit(P0, 5)  # accepted
    admit_all(healer, P0, [6, 9])
    seek(healer)
    healer.admit(P0, 7)  # healed
    records = [r for r in caplog.records if "offset gap" in r.getMessage()]
    assert [(r.levelno, r.topic, r.partition, r.missing_from, r.missing_to) for r in records] == [  # type: ignore[attr-defined]
        (logging.WARNING, "frames", 0, 3, 4),
        (logging.INFO, "frames", 0, 7, 8),
    ]


# --- partitions --------------------------------------------------------------------------


def test_partitions_are_independent(healer: GapHealer, clock: FakeClock, settled: list[SettledGap]) -> None:
    admit_all(healer, P1, [100, 101])
    open_gap(healer, P0)
    assert admit_all(healer, P1, [102, 103]) == [DELIVER, DELIVER]  # P1 goes on meanwhile
    assert healer.admit(P1, 110) is HEAL  # a gap of its own
    assert healer.seeks() == {P1: 104}  # P0 awaits its answer, P1 seeks at once
    seek(healer)
    assert healer.healing() == [P0, P1]
    assert healer.admit(P0, 3) is DELIVER
    assert healer.healing() == [P1]
    assert healer.admit(P1, 104) is DELIVER
    assert [(g.partition, g.outcome) for g in settled] == [(P0, GapOutcome.HEALED), (P1, GapOutcome.HEALED)]


def test_revocation_forgets_a_partition_and_its_gap_uncounted(
    healer: GapHealer, settled: list[SettledGap], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="stream_worker.service.gaps")
    open_gap(healer)
    healer.admit(P0, 5)
    admit_all(healer, P1, [0])
    healer.forget([P0])
    assert healer.partitions() == [P1]
    assert healer.expected(P0) is None and healer.healing() == [] and healer.seeks() == {}
    assert settled == [] and not healer.counts
    assert [r.getMessage() for r in caplog.records] == ["offset gap left to the next owner"]
    assert healer.admit(P0, 9) is DELIVER  # no longer ours: untouched, not tracked
    assert healer.expected(P0) is None
    assert healer.expected(P1) == 1


def test_reassignment_starts_again_from_the_first_record(
    healer: GapHealer, settled: list[SettledGap]
) -> None:
    open_gap(healer)
    healer.forget([P0])
    healer.assign([P0])
    assert healer.admit(P0, 1) is DELIVER  # the new start (e.g. the last commit)
    assert admit_all(healer, P0, [2, 3, 4, 5]) == [DELIVER] * 4
    assert healer.seeks() == {} and settled == []


def test_reassignment_without_revocation_also_starts_again(healer: GapHealer) -> None:
    open_gap(healer)
    healer.assign([P0], {P0: 0})
    assert healer.seeks() == {} and healer.healing() == []
    assert admit_all(healer, P0, [0, 1]) == [DELIVER, DELIVER]


# --- one polled batch --------------------------------------------------------------------


def position(record: tuple[tuple[str, int], int]) -> tuple[tuple[str, int], int]:
    return record


def test_a_gap_in_a_batch_skips_the_rest_of_its_partition_and_keeps_the_others(healer: GapHealer) -> None:
    admit_all(healer, P0, [4])
    admit_all(healer, P1, [0])
    batch = [(P0, 5), (P1, 1), (P0, 7), (P1, 2), (P0, 8), (P0, 9), (P1, 3)]
    assert healer.filter(batch, position) == [(P0, 5), (P1, 1), (P1, 2), (P1, 3)]
    assert healer.seeks() == {P0: 6}
    assert healer.expected(P0) == 6 and healer.expected(P1) == 4


def test_only_the_first_record_of_a_batch_answers_a_seek(settled: list[SettledGap]) -> None:
    healer = GapHealer(max_tries=1, max_seconds=2.0, clock=FakeClock(), on_settled=settled.append)
    healer.assign([P0])
    admit_all(healer, P0, [0])
    assert healer.filter([(P0, 2), (P0, 3)], position) == []
    seek(healer)
    # The answer is accepted (one try) and the records after it in the batch follow in order.
    assert healer.filter([(P0, 2), (P0, 3), (P0, 4)], position) == [(P0, 2), (P0, 3), (P0, 4)]
    assert [(g.outcome, g.missing_from, g.missing_to) for g in settled] == [(GapOutcome.ACCEPTED, 1, 1)]


def test_a_batch_with_duplicates_and_a_healed_gap(healer: GapHealer) -> None:
    open_gap(healer)
    batch = [(P0, 1), (P0, 2), (P0, 3), (P0, 4), (P0, 5), (P1, 0)]
    assert healer.filter(batch, position) == [(P0, 3), (P0, 4), (P0, 5), (P1, 0)]


# --- the Kafka side: consume_records with a fake consumer --------------------------------


def offsets(records: list[Any]) -> list[tuple[int, int]]:
    return [(r.partition(), r.offset()) for r in records]


def test_consume_records_without_gaps_makes_no_seek(healer: GapHealer) -> None:
    consumer = FakeConsumer([[FakeMessage("frames", 0, o) for o in range(10)]] * 3)
    for _ in range(3):
        kafka.consume_records(consumer, 64, 0.1, healer)  # type: ignore[arg-type]
    assert consumer.seeks == [] and consumer.calls == ["consume"] * 3
    assert healer.expected(P0) == 10  # the repeated batches were dropped as duplicates


def test_consume_records_filters_a_gap_and_seeks_back_in_the_same_call(healer: GapHealer) -> None:
    eof = FakeMessage("frames", 1, 0, KafkaError(KafkaError._PARTITION_EOF))
    consumer = FakeConsumer(
        [
            [FakeMessage("frames", 0, 0), FakeMessage("frames", 0, 2), FakeMessage("frames", 1, 0), eof],
            [FakeMessage("frames", 0, 1), FakeMessage("frames", 0, 2)],
        ]
    )
    first = kafka.consume_records(consumer, 64, 0.1, healer)  # type: ignore[arg-type]
    assert offsets(first) == [(0, 0), (1, 0)]
    assert consumer.seeks == [("frames", 0, 1)]
    second = kafka.consume_records(consumer, 64, 0.1, healer)  # type: ignore[arg-type]
    assert offsets(second) == [(0, 1), (0, 2)]
    assert healer.counts == {("frames", GapOutcome.HEALED): 1}


def test_a_refused_seek_is_made_again_before_the_next_poll(healer: GapHealer) -> None:
    consumer = FakeConsumer(
        [[FakeMessage("frames", 0, 0), FakeMessage("frames", 0, 2)], [], [FakeMessage("frames", 0, 1)]],
        refuse_seeks=1,
    )
    kafka.consume_records(consumer, 64, 0.1, healer)  # type: ignore[arg-type]
    assert consumer.seeks == []
    kafka.consume_records(consumer, 64, 0.1, healer)  # type: ignore[arg-type]
    assert consumer.calls == ["consume", "seek", "seek", "consume"]
    assert consumer.seeks == [("frames", 0, 1)]
    assert offsets(kafka.consume_records(consumer, 64, 0.1, healer)) == [(0, 1)]  # type: ignore[arg-type]


def test_consume_records_without_a_healer_is_unchanged() -> None:
    consumer = FakeConsumer([[FakeMessage("frames", 0, 5), FakeMessage("frames", 0, 2)]])
    assert offsets(kafka.consume_records(consumer, 64, 0.1)) == [(0, 5), (0, 2)]  # type: ignore[arg-type]


def test_a_fatal_error_still_raises(healer: GapHealer) -> None:
    fatal = KafkaError(KafkaError._FATAL, fatal=True)
    consumer = FakeConsumer([[FakeMessage("frames", 0, 0, fatal)]])
    with pytest.raises(KafkaException):
        kafka.consume_records(consumer, 64, 0.1, healer)  # type: ignore[arg-type]


# --- the metric --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metrics", "name"),
    [
        (Metrics, "stream_worker_consumer_offset_gaps_total"),
        (SightingsMetrics, "stream_worker_sightings_consumer_offset_gaps_total"),
    ],
)
def test_gaps_are_counted_by_topic_and_outcome(metrics: type[ServiceMetrics], name: str) -> None:
    m = metrics()
    sample = m.registry.get_sample_value
    assert sample(name, {"topic": "frames", "outcome": "healed"}) is None
    m.show_gaps("frames")
    assert sample(name, {"topic": "frames", "outcome": "healed"}) == 0
    assert sample(name, {"topic": "frames", "outcome": "accepted"}) == 0
    m.count_gap(SettledGap(P0, 3, 4, GapOutcome.HEALED, 1, 0.01))
    m.count_gap(SettledGap(P1, 3, 4, GapOutcome.HEALED, 1, 0.01))
    m.count_gap(SettledGap(P0, 9, 9, GapOutcome.ACCEPTED, 3, 1.4))
    assert sample(name, {"topic": "frames", "outcome": "healed"}) == 2
    assert sample(name, {"topic": "frames", "outcome": "accepted"}) == 1
