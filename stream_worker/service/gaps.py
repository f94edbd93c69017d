"""Offset gaps in consumed partitions: detect them, go back for the missing records, bounded.

On a topic whose offsets are contiguous, a record beyond the next expected offset of its partition
is a gap. The local Tansu broker makes such gaps now and then: a fetch returns a later batch
stored before an earlier one, and the consumer, now past it, never asks for the earlier one
(scripts/broker_fetch_skip.py). Going back (a seek to the expected offset) finds it once stored.
On Kafka a gap can be real (transaction markers, compaction, deleted records): going back finds
the same later record again.

`GapHealer` decides per consumed record, with no Kafka types (service/kafka.py does the seeks):
- `DELIVER`: in order (or the first record of a partition, or a gap accepted): process it;
- `DROP`: before the expected offset, already delivered (a re-delivery after a seek or a
  pause/resume): skip it;
- `HEAL`: beyond the expected offset: skip it and every later record of its partition in the same
  poll; the caller seeks the partition back to the expected offset when `seeks()` says so (it
  asks at every poll: the tries are driven by time, not by records arriving).

Healing is bounded: at most `max_tries` seeks per gap, spread over `max_seconds` (a fetch answers
again within milliseconds, while a batch written late needs a moment to be stored), and the
first record that answers a seek after the last try, or after `max_seconds`, is accepted
(delivered, the gap counted as accepted and logged). Only an answer to a seek is accepted, so the
records skipped while waiting between tries are always read again first. No loop, no stall. A
stream without gaps does no seeks: a dictionary lookup and a comparison per record.

Each gap is logged once, when it is settled (healed or accepted), with its partition and missing
range, and reported to `on_settled` (the services count it as `..._consumer_offset_gaps_total`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import TypeVar

log = logging.getLogger(__name__)

Partition = tuple[str, int]  # (topic, partition)
T = TypeVar("T")

DEFAULT_MAX_TRIES = 3
DEFAULT_MAX_SECONDS = 2.0


class Verdict(Enum):
    DELIVER = "deliver"
    DROP = "drop"
    HEAL = "heal"


class GapOutcome(StrEnum):
    HEALED = "healed"  # the record at the expected offset came after going back
    ACCEPTED = "accepted"  # still missing after the bound: delivered past it


@dataclass(frozen=True, slots=True)
class SettledGap:
    partition: Partition
    missing_from: int  # first missing offset
    missing_to: int  # last missing offset (inclusive), as first seen
    outcome: GapOutcome
    tries: int  # seeks made for it
    seconds: float  # from its detection to its settlement

    @property
    def topic(self) -> str:
        return self.partition[0]


class _Gap:
    __slots__ = ("awaiting_answer", "detected_at", "first_beyond", "last_try_at", "refused", "tries")

    def __init__(self, first_beyond: int, detected_at: float) -> None:
        self.first_beyond = first_beyond  # the record that revealed it
        self.detected_at = detected_at
        self.tries = 0  # seeks made
        self.last_try_at = detected_at
        self.awaiting_answer = False  # a seek was made and no record beyond has come since
        self.refused = False  # the consumer refused the last seek asked for


class _PartitionState:
    __slots__ = ("delivered", "expected", "gap")

    def __init__(self, expected: int | None) -> None:
        self.expected = expected  # the next offset to deliver; None until the first record
        self.delivered = False  # a record delivered since the assignment
        self.gap: _Gap | None = None


class GapHealer:
    """Per assigned partition, the next expected offset and the gap being healed, if any.

    Records of partitions not assigned (through `assign`) are delivered untouched: whether they
    are still wanted is the caller's business (a record fetched before a revocation).
    """

    def __init__(
        self,
        max_tries: int = DEFAULT_MAX_TRIES,
        max_seconds: float = DEFAULT_MAX_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        on_settled: Callable[[SettledGap], None] | None = None,
    ) -> None:
        if max_tries < 0 or max_seconds < 0:
            raise ValueError("max_tries and max_seconds cannot be negative")
        self.max_tries = max_tries
        self.max_seconds = max_seconds
        # Tries are spread over the time bound: the first at once, the others this far apart.
        self.retry_interval_s = max_seconds / max_tries if max_tries else 0.0
        self._clock = clock
        self._on_settled = on_settled
        self._partitions: dict[Partition, _PartitionState] = {}
        self._gaps: set[Partition] = set()  # partitions with a gap being healed
        self.counts: Counter[tuple[str, GapOutcome]] = Counter()  # (topic, outcome) -> gaps

    # --- ownership -------------------------------------------------------------------------

    def assign(
        self, partitions: Iterable[Partition], positions: Mapping[Partition, int] | None = None
    ) -> None:
        """Start (again) on newly assigned partitions. The expected offset is the one given in
        `positions` (where reading starts, when the caller knows it), else the first record's.
        A first record before the given position is taken as the start (the consumer's position
        was out of range and reset), not dropped."""
        positions = positions or {}
        for partition in partitions:
            position = positions.get(partition)
            self._partitions[partition] = _PartitionState(
                position if position is not None and position >= 0 else None
            )
            self._gaps.discard(partition)

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop what is known of revoked or lost partitions; a gap being healed is abandoned
        uncounted (nothing past it was delivered, so the next owner reads it from the commit)."""
        for partition in partitions:
            state = self._partitions.pop(partition, None)
            self._gaps.discard(partition)
            if state is not None and state.gap is not None:
                log.info(
                    "offset gap left to the next owner",
                    extra={
                        "topic": partition[0],
                        "partition": partition[1],
                        "missing_from": state.expected,
                        "missing_to": state.gap.first_beyond - 1,
                    },
                )

    # --- per record ------------------------------------------------------------------------

    def admit(self, partition: Partition, offset: int) -> Verdict:
        """What to do with the record at `offset` of `partition`, consumed now."""
        state = self._partitions.get(partition)
        if state is None:
            return Verdict.DELIVER
        expected = state.expected
        if expected is None or offset == expected:
            if state.gap is not None:
                self._settle(partition, state, GapOutcome.HEALED, state.gap.first_beyond - 1)
            state.expected = offset + 1
            state.delivered = True
            return Verdict.DELIVER
        if offset < expected:
            if state.delivered or state.gap is not None:
                return Verdict.DROP
            # Before the given start and nothing read yet: the consumer started elsewhere (its
            # position was out of range and reset); go with it.
            state.expected = offset + 1
            state.delivered = True
            return Verdict.DELIVER
        return self._beyond(partition, state, offset)

    def _beyond(self, partition: Partition, state: _PartitionState, offset: int) -> Verdict:
        now = self._clock()
        gap = state.gap
        if gap is None:
            gap = state.gap = _Gap(offset, now)
            if self.max_tries == 0:  # detection only
                return self._accept(partition, state, offset)
            self._gaps.add(partition)  # its first seek is due at once
            return Verdict.HEAL
        elapsed = now - gap.detected_at
        if gap.awaiting_answer:  # the first record since the last seek: the broker's answer
            gap.awaiting_answer = False
            if gap.tries >= self.max_tries or elapsed >= self.max_seconds:
                return self._accept(partition, state, offset)
        elif gap.refused and elapsed >= self.max_seconds:
            # The consumer keeps refusing the seek: stop waiting for it.
            return self._accept(partition, state, offset)
        return Verdict.HEAL

    def _accept(self, partition: Partition, state: _PartitionState, offset: int) -> Verdict:
        self._settle(partition, state, GapOutcome.ACCEPTED, offset - 1)
        state.expected = offset + 1
        state.delivered = True
        return Verdict.DELIVER

    def _settle(
        self, partition: Partition, state: _PartitionState, outcome: GapOutcome, missing_to: int
    ) -> None:
        gap = state.gap
        assert gap is not None and state.expected is not None
        state.gap = None
        self._gaps.discard(partition)
        settled = SettledGap(
            partition,
            state.expected,
            missing_to,
            outcome,
            gap.tries,
            round(self._clock() - gap.detected_at, 3),
        )
        self.counts[(partition[0], outcome)] += 1
        fields = {
            "topic": partition[0],
            "partition": partition[1],
            "missing_from": settled.missing_from,
            "missing_to": settled.missing_to,
            "missing": settled.missing_to - settled.missing_from + 1,
            "tries": settled.tries,
            "seconds": settled.seconds,
        }
        if outcome is GapOutcome.HEALED:
            log.info("offset gap healed: the missing records were read again", extra=fields)
        else:
            log.warning("offset gap accepted: records missing from the partition", extra=fields)
        if self._on_settled is not None:
            self._on_settled(settled)

    def filter(self, items: Sequence[T], position: Callable[[T], tuple[Partition, int]]) -> list[T]:
        """The items of one poll to process, in order: after a record that opens or keeps a gap,
        the rest of its partition's records in the poll are skipped too (they come again after
        the seek); other partitions' records are unaffected."""
        kept: list[T] = []
        healing: set[Partition] | None = None
        for item in items:
            partition, offset = position(item)
            if healing is not None and partition in healing:
                continue
            verdict = self.admit(partition, offset)
            if verdict is Verdict.DELIVER:
                kept.append(item)
            elif verdict is Verdict.HEAL:
                if healing is None:
                    healing = set()
                healing.add(partition)
        return kept

    # --- seeks -----------------------------------------------------------------------------

    def seeks(self) -> dict[Partition, int]:
        """The seeks due now (partition -> the offset to read again from): a gap's first at once,
        the next ones `retry_interval_s` after the previous, once its answer came, and a last one
        at `max_seconds`. None without gaps."""
        if not self._gaps:
            return {}
        now = self._clock()
        due = {}
        for partition in self._gaps:
            state = self._partitions[partition]
            gap = state.gap
            if gap is None or state.expected is None or gap.awaiting_answer:
                continue
            if (
                gap.tries == 0
                or gap.refused
                or now - gap.last_try_at >= self.retry_interval_s
                or now - gap.detected_at >= self.max_seconds
            ):
                due[partition] = state.expected
        return due

    def seeked(self, partition: Partition) -> None:
        """The seek of `partition` was made: its next record beyond the gap is the answer."""
        gap = self._gap(partition)
        if gap is not None:
            gap.tries += 1
            gap.last_try_at = self._clock()
            gap.awaiting_answer = True
            gap.refused = False

    def seek_refused(self, partition: Partition) -> None:
        """The consumer refused the seek (its fetch not started yet): due again at the next call
        of `seeks`; once `max_seconds` have passed, the next record beyond is accepted."""
        gap = self._gap(partition)
        if gap is not None:
            gap.refused = True

    def _gap(self, partition: Partition) -> _Gap | None:
        state = self._partitions.get(partition)
        return state.gap if state is not None else None

    # --- inspection ------------------------------------------------------------------------

    def expected(self, partition: Partition) -> int | None:
        state = self._partitions.get(partition)
        return state.expected if state else None

    def healing(self) -> list[Partition]:
        """Partitions with a gap being healed."""
        return [p for p, state in self._partitions.items() if state.gap is not None]

    def partitions(self) -> list[Partition]:
        return list(self._partitions)
