"""The input side: the headers a camera may set on a frame, and what the worker (and the history
store, for the records it cannot write) adds to a dead letter."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class FrameHeader(StrEnum):
    """Kafka headers a camera may set on an input frame (all optional, UTF-8 values)."""

    CAMERA_ID = "camera_id"  # falls back to the record key
    FRAME_ID = "frame_id"  # falls back to "topic:partition:offset"
    CAPTURED_AT = "captured_at"  # ISO-8601 or epoch milliseconds
    # A static marker (the connector's motion gate): the record stands for frames in which nothing
    # moved, its value is empty, and this says the frames' size, "WIDTHxHEIGHT".
    STATIC = "static"


class DeadLetterHeader(StrEnum):
    """Headers the worker adds to a dead-lettered frame (next to the frame's own headers), and the
    history store to a dead-lettered record."""

    STAGE = "error.stage"
    REASON = "error.reason"
    DETAIL = "error.detail"
    SOURCE_TOPIC = "source.topic"
    SOURCE_PARTITION = "source.partition"
    SOURCE_OFFSET = "source.offset"
    # Only when the broker refused the record with the frame in it (too large): the frame's size.
    VALUE_OMITTED = "error.value_omitted"


class ErrorStage(StrEnum):
    """Where in the pipeline a frame (or a record the history store cannot write) was rejected."""

    VALIDATE = "validate"  # before inference: headers, size
    DECODE = "decode"  # Triton could not decode the image
    INFERENCE = "inference"  # Triton failed on this frame alone, every attempt
    STORE = "store"  # the history store: a sighting or an alert it cannot write (store.dlq)


class ErrorReason(StrEnum):
    """Why a frame was rejected: a short, fixed vocabulary (it labels the DLQ metric)."""

    EMPTY_FRAME = "empty_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    MISSING_CAMERA_ID = "missing_camera_id"
    INVALID_CAMERA_ID = "invalid_camera_id"  # not the contract's camera id (contracts/ids.py)
    INVALID_HEADER = "invalid_header"
    INVALID_IMAGE = "invalid_image"
    INFERENCE_FAILED = "inference_failed"
    INVALID_RECORD = "invalid_record"  # the store: not the topic's contract (undecodable, over a limit)
    UNWRITABLE_RECORD = "unwritable_record"  # the store: the database refused this record alone


class FrameHeaders(BaseModel):
    """Input record headers (value = the JPEG bytes, key = the camera id)."""

    model_config = ConfigDict(title="FrameHeaders", extra="allow")

    camera_id: str | None = Field(None, description="Camera id; the record key when absent.")
    frame_id: str | None = Field(None, description="Frame id; 'topic:partition:offset' when absent.")
    captured_at: str | None = Field(
        None,
        description="When the camera took the frame: ISO-8601 (naive means UTC) or epoch milliseconds.",
        examples=["2025-01-31T12:00:00.250Z", "1738324800250"],
    )
    static: str | None = Field(
        None,
        pattern=r"^[1-9][0-9]{0,4}x[1-9][0-9]{0,4}$",
        description="Set by the camera connector on a static marker: a record with an empty value that "
        "stands for frames its motion gate found still (the size of those frames, WIDTHxHEIGHT). The "
        "worker answers it with an event that says examined false, so that consumers know the camera "
        "was watched and nothing moved.",
        examples=["1920x1080"],
    )


class DeadLetterHeaders(BaseModel):
    """Headers added to a dead-letter record; key, value and the frame's own headers are kept."""

    model_config = ConfigDict(title="DeadLetterHeaders", populate_by_name=True)

    error_stage: ErrorStage = Field(alias=DeadLetterHeader.STAGE.value)
    error_reason: ErrorReason = Field(alias=DeadLetterHeader.REASON.value)
    error_detail: str = Field(alias=DeadLetterHeader.DETAIL.value, description="Human-readable detail.")
    source_topic: str = Field(alias=DeadLetterHeader.SOURCE_TOPIC.value)
    source_partition: str = Field(
        alias=DeadLetterHeader.SOURCE_PARTITION.value, pattern=r"^\d+$", description="Decimal."
    )
    source_offset: str = Field(
        alias=DeadLetterHeader.SOURCE_OFFSET.value, pattern=r"^\d+$", description="Decimal."
    )
    value_omitted: str | None = Field(
        None,
        alias=DeadLetterHeader.VALUE_OMITTED.value,
        pattern=r"^\d+$",
        description="Present only when the record was too large for the broker with the frame in it: "
        "the value is then empty and this is the frame's size in bytes.",
    )
