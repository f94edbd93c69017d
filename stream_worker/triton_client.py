"""gRPC client for the `plate_recognition` Triton model: JPEG bytes in, `FrameResult`s out.

The worker and the `recognize` command both go through this class so that the wire format
(tensor names, flattened per-plate outputs) and the error semantics live in one place:
`TritonUnavailableError` means "try the whole batch again later", `TritonInferenceError` means
the server refused this particular request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import numpy as np
from tritonclient.grpc import (
    MAX_GRPC_MESSAGE_SIZE,
    InferenceServerClient,
    InferInput,
    InferRequestedOutput,
    KeepAliveOptions,
)
from tritonclient.utils import InferenceServerException

from stream_worker.recognition import GLOBAL, LPRNET, RECOGNIZERS, FrameResult, Plate

DEFAULT_MODEL_NAME = "plate_recognition"
INPUT_NAME = "images"
# Optional BOOL per frame: answer its plates' pictures. Sent only when some frame asks, so that a
# request without pictures is what it always was (and an older model still answers it).
PLATE_IMAGES_NAME = "plate_images"
# Optional BYTES per frame: its camera's mask polygons as JSON (b"" for none); Triton drops the
# plates whose centre lies inside one before reading them. Sent only when some frame has masks.
PLATE_MASKS_NAME = "plate_masks"
# Optional BYTES per frame: which recognizers read its plates, b"lprnet", b"global" or
# b"lprnet,global" (absent or b"" = b"lprnet"). Sent only when some frame asks for other than LPRNet.
PLATE_RECOGNIZERS_NAME = "plate_recognizers"
# Optional BOOL per frame: the frame is itself a plate crop (no detection, the whole image is the
# plate). Sent only when some frame is one.
FRAME_IS_PLATE_NAME = "frame_is_plate"
# Optional BYTES per frame: the detector's scales for it, b"1.0,0.5,3.0" (a dash camera's small
# plates); b"" = the model's own. Sent only when some frame has scales of its own.
DETECTOR_SCALES_NAME = "detector_scales"
OUTPUT_NAMES = (
    "plate_frame",
    "plate_box",
    "plate_corners",
    "plate_text",
    "plate_confidence",
    "plate_character_confidences",
    "plate_detection_score",
    "plate_layout",
    "plate_image",
    "plate_lprnet_probs",
    "plate_global_probs",
    "plate_recognizers",
    "frame_status",
    "frame_size",
    "frame_masked",
)

# gRPC codes after which the same request may succeed later: the server is down, overloaded,
# restarting or still loading the model.
_RETRYABLE_STATUSES = frozenset(
    {
        "StatusCode.UNAVAILABLE",
        "StatusCode.DEADLINE_EXCEEDED",
        "StatusCode.NOT_FOUND",
        "StatusCode.CANCELLED",
    }
)
# Triton reports a model that is not (yet) loaded, a crashed Python-backend stub it is
# restarting, (INTERNAL "Server not ready") a server shutting down, or a sub-model whose bounded
# queue is full (an overloaded server) with these phrases; the request itself is fine, so they are
# retryable too: an overload must not send good frames to the dead-letter topic.
_RETRYABLE_MESSAGES = (
    "unknown model",
    "is not ready",
    "server not ready",
    "no available versions",
    "is not healthy",
    "exceeds maximum queue size",
)


# gRPC waits up to 120 s between reconnection attempts by default, so after a longer outage a
# client kept failing for 26 s after Triton was ready again (measured); cap the wait at 1 s.
_MAX_RECONNECT_BACKOFF_MS = 1000


def _channel_args() -> list[tuple[str, int]]:
    """tritonclient's own channel defaults (message size, keepalive) plus the reconnect cap."""
    keepalive = KeepAliveOptions()
    return [
        ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.keepalive_time_ms", keepalive.keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", keepalive.keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", keepalive.keepalive_permit_without_calls),
        ("grpc.http2.max_pings_without_data", keepalive.http2_max_pings_without_data),
        ("grpc.initial_reconnect_backoff_ms", _MAX_RECONNECT_BACKOFF_MS // 4),
        ("grpc.max_reconnect_backoff_ms", _MAX_RECONNECT_BACKOFF_MS),
    ]


@dataclass(frozen=True)
class TritonTLS:
    """PEM files for a gRPC channel over TLS, so that only a server holding a certificate these roots
    sign gets the frames (and, with a client key and certificate, only clients it trusts get answers).

    `ca_file` None: the system's roots verify the server.
    """

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None


def tls_from_files(ca_file: Path | None, cert_file: Path | None, key_file: Path | None) -> TritonTLS | None:
    """TLS when any file is given, else None (plain text); a client key needs its certificate."""
    if (cert_file is None) != (key_file is None):
        raise ValueError("a client certificate and its key come together (mutual TLS): give both or neither")
    if ca_file is None and cert_file is None:
        return None
    return TritonTLS(ca_file, cert_file, key_file)


def _optional(path: Path | None) -> str | None:
    return None if path is None else str(path)


class TritonError(Exception):
    """Base class for failures talking to the `plate_recognition` model."""


class TritonUnavailableError(TritonError):
    """Triton is unreachable, timed out or the model is not ready: retry the whole batch later."""


class TritonInferenceError(TritonError):
    """Triton answered this request with an error (or an answer that breaks the contract)."""


def _translate(error: InferenceServerException, where: str) -> TritonError:
    """`where` is the address and the transport: a plain-text client of a TLS server (or the
    reverse) only sees a closed socket, so the message must say which one was tried."""
    message = error.message() or str(error)
    status = error.status() or ""
    if status in _RETRYABLE_STATUSES or any(m in message.lower() for m in _RETRYABLE_MESSAGES):
        return TritonUnavailableError(f"Triton at {where} is unavailable ({status}): {message}")
    return TritonInferenceError(f"Triton at {where} rejected the request ({status}): {message}")


def _decode(value: bytes | str) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def recognizer_names(value: str | Sequence[str]) -> tuple[str, ...]:
    """`"lprnet,global"` or `("global",)` -> the names in `RECOGNIZERS` order; empty -> `("lprnet",)`.
    Raises ValueError naming an unknown recognizer."""
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else [str(n) for n in value]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in RECOGNIZERS]
    if unknown:
        raise ValueError(f"unknown recognizer(s) {unknown}: each must be one of {', '.join(RECOGNIZERS)}")
    return tuple(n for n in RECOGNIZERS if n in names) or (LPRNET,)


def _probabilities(array: np.ndarray, ran: bool) -> np.ndarray | None:
    return np.array(array, np.float32) if ran else None


def parse_outputs(outputs: Mapping[str, np.ndarray | None], frame_count: int) -> list[FrameResult]:
    """Regroup the model's flattened per-plate outputs into one `FrameResult` per input frame.

    Pure so it can be tested without a server. Raises `TritonInferenceError` when the arrays do
    not match the model contract (missing output, wrong lengths, plate of a non-existent frame).
    """
    missing = [name for name in OUTPUT_NAMES if outputs.get(name) is None]
    if missing:
        raise TritonInferenceError(f"Triton response lacks outputs {missing}")
    statuses = outputs["frame_status"].reshape(-1)
    sizes = outputs["frame_size"].reshape(-1, 2)
    masked = outputs["frame_masked"].reshape(-1)
    if len(statuses) != frame_count or len(sizes) != frame_count or len(masked) != frame_count:
        raise TritonInferenceError(
            f"Triton answered {len(statuses)} statuses, {len(sizes)} sizes and {len(masked)} masked "
            f"counts for {frame_count} frames"
        )
    plate_frames = outputs["plate_frame"].reshape(-1)
    boxes = outputs["plate_box"].reshape(-1, 4)
    corners = outputs["plate_corners"].reshape(-1, 4, 2)
    texts = [_decode(text) for text in outputs["plate_text"].reshape(-1)]
    confidences = outputs["plate_confidence"].reshape(-1)
    character_confidences = outputs["plate_character_confidences"].reshape(-1)
    scores = outputs["plate_detection_score"].reshape(-1)
    layouts = outputs["plate_layout"].reshape(-1)
    images = outputs["plate_image"].reshape(-1)
    lprnet_probs = outputs["plate_lprnet_probs"]
    global_probs = outputs["plate_global_probs"]
    ran = [recognizer_names(_decode(value)) for value in outputs["plate_recognizers"].reshape(-1)]
    plate_count = len(plate_frames)
    lengths = {
        "box": len(boxes),
        "corners": len(corners),
        "text": len(texts),
        "confidence": len(confidences),
        "detection score": len(scores),
        "layout": len(layouts),
        "image": len(images),
        "LPRNet probabilities": len(lprnet_probs),
        "global probabilities": len(global_probs),
        "recognizers": len(ran),
    }
    if any(length != plate_count for length in lengths.values()):
        raise TritonInferenceError(
            f"Triton's per-plate outputs disagree in length: frame {plate_count}, "
            + ", ".join(f"{name} {length}" for name, length in lengths.items())
        )
    if sum(len(text) for text in texts) != len(character_confidences):
        raise TritonInferenceError(
            f"Triton sent {len(character_confidences)} character confidences for "
            f"{sum(len(text) for text in texts)} characters"
        )
    if plate_count and (plate_frames.min() < 0 or plate_frames.max() >= frame_count):
        raise TritonInferenceError(
            f"Triton returned a plate for frame {int(plate_frames.max())} of a {frame_count}-frame request"
        )

    plates_by_frame: list[list[Plate]] = [[] for _ in range(frame_count)]
    first_character = 0
    for i in range(plate_count):
        x1, y1, x2, y2 = (float(v) for v in boxes[i])
        characters = character_confidences[first_character : first_character + len(texts[i])]
        first_character += len(texts[i])
        plates_by_frame[int(plate_frames[i])].append(
            Plate(
                text=texts[i],
                confidence=float(confidences[i]),
                box=(x1, y1, x2, y2),
                detection_score=float(scores[i]),
                corners=tuple((float(x), float(y)) for x, y in corners[i]),
                character_confidences=tuple(float(c) for c in characters),
                layout=_decode(layouts[i]),
                image=bytes(images[i]),
                recognizers=ran[i],
                lprnet_probs=_probabilities(lprnet_probs[i], LPRNET in ran[i]),
                global_probs=_probabilities(global_probs[i], GLOBAL in ran[i]),
            )
        )
    return [
        FrameResult(
            status=_decode(statuses[i]),
            width=int(sizes[i][0]),
            height=int(sizes[i][1]),
            plates=tuple(plates_by_frame[i]),
            masked=int(masked[i]),
        )
        for i in range(frame_count)
    ]


class PlateRecognitionClient:
    """Sends a batch of JPEG frames to `plate_recognition` in one gRPC request.

    Thread-safe without a lock: tritonclient documents its gRPC client's unary calls (`infer`,
    readiness and metadata) as safe to share between threads, and they share one channel.
    """

    def __init__(
        self,
        url: str,
        model_name: str = DEFAULT_MODEL_NAME,
        timeout_s: float = 30.0,
        tls: TritonTLS | None = None,
    ) -> None:
        self.url = url
        self._where = f"{url} ({'TLS' if tls else 'plain text'})"
        self.model_name = model_name
        self.timeout_s = timeout_s
        if tls is None:
            self._client = InferenceServerClient(url=url, channel_args=_channel_args())
        else:
            # No fallback to plain text: a server that does not speak TLS fails every call.
            self._client = InferenceServerClient(
                url=url,
                ssl=True,
                root_certificates=_optional(tls.ca_file),
                private_key=_optional(tls.key_file),
                certificate_chain=_optional(tls.cert_file),
                channel_args=_channel_args(),
            )
        self._model_version: str | None = None

    def recognize(
        self,
        frames: Sequence[bytes],
        plate_images: Sequence[bool] | None = None,
        plate_masks: Sequence[bytes] | None = None,
        recognizers: Sequence[str | Sequence[str]] | None = None,
        frame_is_plate: Sequence[bool] | None = None,
        detector_scales: Sequence[Sequence[float]] | None = None,
    ) -> list[FrameResult]:
        """One `FrameResult` per frame, in order. An empty batch needs no request.

        `plate_images`: per frame, whether its plates come with their pictures (`Plate.image`);
        `plate_masks`: per frame, its mask polygons as JSON (b"" for none; `FrameResult.masked`
        counts the plates they dropped); `recognizers`: per frame, the recognizers that read its
        plates (a tuple of names from `RECOGNIZERS` or a comma string; empty = LPRNet alone);
        `frame_is_plate`: per frame, whether it is itself a plate crop; `detector_scales`: per
        frame, the detector's scales for it (empty = the model's own). Without any, or with only
        the defaults, the request carries no such input at all.
        """
        if not frames:
            return []
        per_frame = {
            "plate_images flags": plate_images,
            "plate_masks values": plate_masks,
            "recognizers values": recognizers,
            "frame_is_plate flags": frame_is_plate,
            "detector_scales values": detector_scales,
        }
        for what, values in per_frame.items():
            if values is not None and len(values) != len(frames):
                raise ValueError(f"{len(values)} {what} for {len(frames)} frames")
        chosen = [",".join(recognizer_names(value)) for value in recognizers or ()]
        inputs = [_bytes_input(INPUT_NAME, [bytes(frame) for frame in frames])]
        if plate_images is not None and any(plate_images):
            inputs.append(_bool_input(PLATE_IMAGES_NAME, plate_images))
        if plate_masks is not None and any(plate_masks):
            inputs.append(_bytes_input(PLATE_MASKS_NAME, [bytes(value) for value in plate_masks]))
        if any(value != LPRNET for value in chosen):
            inputs.append(_bytes_input(PLATE_RECOGNIZERS_NAME, [value.encode() for value in chosen]))
        if frame_is_plate is not None and any(frame_is_plate):
            inputs.append(_bool_input(FRAME_IS_PLATE_NAME, frame_is_plate))
        if detector_scales is not None and any(detector_scales):
            scales = [",".join(f"{scale:g}" for scale in each).encode() for each in detector_scales]
            inputs.append(_bytes_input(DETECTOR_SCALES_NAME, scales))
        try:
            result = self._client.infer(
                self.model_name,
                inputs,
                outputs=[InferRequestedOutput(name) for name in OUTPUT_NAMES],
                client_timeout=self.timeout_s,
            )
        except InferenceServerException as error:
            raise _translate(error, self._where) from error
        if version := result.get_response().model_version:
            self._model_version = version
        return parse_outputs({name: result.as_numpy(name) for name in OUTPUT_NAMES}, len(frames))

    def is_ready(self) -> bool:
        """True when the server answers and the model is loaded; never raises."""
        try:
            return bool(
                self._client.is_server_ready(client_timeout=self.timeout_s)
                and self._client.is_model_ready(self.model_name, client_timeout=self.timeout_s)
            )
        except InferenceServerException:
            return False

    @property
    def model_version(self) -> str:
        """The model version that serves requests, for events; asked once, then kept current."""
        if self._model_version is None:
            try:
                metadata = self._client.get_model_metadata(self.model_name, client_timeout=self.timeout_s)
            except InferenceServerException as error:
                raise _translate(error, self._where) from error
            self._model_version = max(metadata.versions, key=int, default="")
        return self._model_version

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> PlateRecognitionClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _bytes_input(name: str, values: Sequence[bytes]) -> InferInput:
    """A BYTES input of one value per frame (an object array: numpy's own bytes type would pad them)."""
    array = np.empty(len(values), dtype=np.object_)
    array[:] = list(values)
    tensor = InferInput(name, [len(values)], "BYTES")
    tensor.set_data_from_numpy(array)
    return tensor


def _bool_input(name: str, values: Sequence[bool]) -> InferInput:
    tensor = InferInput(name, [len(values)], "BOOL")
    tensor.set_data_from_numpy(np.array([bool(value) for value in values], dtype=np.bool_))
    return tensor
