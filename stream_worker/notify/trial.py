"""The console's "send a test" (`notify-tests`, a NotifyTest per target name): the test alert a target
gets, a PlateAlert like any other (so its receiver's code path is the real one) that says it is a
test: list `test`, plate `TEST000`, camera `console-test`; its alert_id is the request's test_id,
so the delivery log names it."""

from __future__ import annotations

from datetime import UTC, datetime

from stream_worker.contracts import PlateAlert, topics
from stream_worker.contracts.notify import NotifyTest

TEST_PLATE = "TEST000"
TEST_CAMERA = "console-test"


def decode_test(key: bytes | None, value: bytes | None) -> tuple[str, NotifyTest | None]:
    """A `notify-tests` record for the compacted follower; ValueError when it is not one."""
    if key is None:
        raise ValueError("record has no key (the key must be the target's name)")
    name = key.decode("utf-8", "replace")
    if value is None:
        return name, None
    try:
        return name, NotifyTest.model_validate_json(value)
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"not a NotifyTest: {str(error)[:200]}") from None


def trial_alert(test: NotifyTest, now: datetime | None = None) -> PlateAlert:
    at = now or datetime.now(UTC)
    return PlateAlert.model_validate(
        {
            "alert_id": test.test_id,
            "list": "test",
            "label": "a test from the console",
            "plate": TEST_PLATE,
            "match_kind": "exact",
            "distance": 0.0,
            "candidate": TEST_PLATE,
            "confidence": 1.0,
            "camera_id": TEST_CAMERA,
            "frame_id": "test",
            "event_id": "test",
            "captured_at": None,
            "box": {"x1": 0, "y1": 0, "x2": 0, "y2": 0},
            "source": {"topic": topics.NOTIFY_TESTS.name, "partition": 0, "offset": 0},
            "frame_source": {"topic": topics.NOTIFY_TESTS.name, "partition": 0, "offset": 0},
            "alerted_at": at,
        }
    )
