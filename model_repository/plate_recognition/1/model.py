"""plate_recognition: the model clients call. JPEG frames in, recognised plates out (Python BLS).

Per request (one micro-batch of frames):
1. every frame is checked from its JPEG header (size limit `max_pixels`) and decoded; a bad frame
   gets `invalid_image: <reason>` and never fails the other frames;
2. the detector runs on all decoded frames concurrently (async BLS);
3. all plates of all frames are cropped and normalised together, then sent as ONE `stn` request
   and ONE `lprnet` request (chunked only beyond their max_batch_size), which Triton's dynamic
   batcher may merge further with other requests;
4. greedy CTC decoding. `plate_confidence` is the minimum over the plate's characters of each
   character's softmax probability (the best one among the time steps that emitted it): the plate
   is only as sure as its least sure character. Empty readings are dropped.
A failing sub-model fails the whole request with a TritonError (the client retries the batch).
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils
from frames import InvalidImage, ctc_greedy_decode, decode_jpeg, plate_confidence, plate_tensor

DEFAULT_MAX_PIXELS = 40_000_000


class SubModelError(RuntimeError):
    pass


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        self.max_pixels = int(parameters.get("max_pixels", DEFAULT_MAX_PIXELS))
        self.detector = parameters.get("detector_model", "plate_detector")
        self.stn = parameters.get("stn_model", "stn")
        self.lprnet = parameters.get("lprnet_model", "lprnet")
        self.recognizer_max_batch = int(parameters.get("recognizer_max_batch", 64))

    async def execute(self, requests: list) -> list:
        return list(await asyncio.gather(*(self._answer(request) for request in requests)))

    async def _answer(self, request: object) -> object:
        try:
            return await self._recognize(request)
        except SubModelError as error:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error)))
        except Exception as error:  # an unexpected bug must fail this request, not the model
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(f"plate_recognition failed: {type(error).__name__}: {error}")
            )

    async def _recognize(self, request: object) -> object:
        frames = pb_utils.get_input_tensor_by_name(request, "images").as_numpy().reshape(-1)
        decoded = await asyncio.gather(*(asyncio.to_thread(self._decode, frame) for frame in frames))
        statuses = [status for status, _ in decoded]
        images = [image for _, image in decoded]
        sizes = np.array(
            [(img.shape[1], img.shape[0]) if img is not None else (0, 0) for img in images], dtype=np.int32
        ).reshape(-1, 2)

        valid = [index for index, image in enumerate(images) if image is not None]
        detections = await asyncio.gather(*(self._detect(images[index]) for index in valid))

        plate_frames: list[int] = []
        plate_boxes: list[np.ndarray] = []
        plate_scores: list[float] = []
        for index, (boxes, scores) in zip(valid, detections, strict=True):
            plate_frames.extend([index] * len(boxes))
            plate_boxes.extend(boxes)
            plate_scores.extend(float(s) for s in scores)
        crops = [plate_tensor(images[f], box) for f, box in zip(plate_frames, plate_boxes, strict=True)]
        logits = await self._read_plates(np.stack(crops)) if crops else np.zeros((0, 23, 18), np.float32)

        keep_frames, keep_boxes, texts, confidences, detection_scores = [], [], [], [], []
        for i, plate_logits in enumerate(logits):
            text, character_confidences = ctc_greedy_decode(plate_logits)
            if not text:
                continue
            keep_frames.append(plate_frames[i])
            keep_boxes.append(plate_boxes[i])
            texts.append(text.encode())
            confidences.append(plate_confidence(character_confidences))
            detection_scores.append(plate_scores[i])

        return pb_utils.InferenceResponse(
            output_tensors=[
                pb_utils.Tensor("plate_frame", np.array(keep_frames, dtype=np.int32)),
                pb_utils.Tensor("plate_box", np.array(keep_boxes, dtype=np.float32).reshape(-1, 4)),
                pb_utils.Tensor("plate_text", np.array(texts, dtype=np.object_)),
                pb_utils.Tensor("plate_confidence", np.array(confidences, dtype=np.float32)),
                pb_utils.Tensor("plate_detection_score", np.array(detection_scores, dtype=np.float32)),
                pb_utils.Tensor("frame_status", np.array([s.encode() for s in statuses], dtype=np.object_)),
                pb_utils.Tensor("frame_size", sizes),
            ]
        )

    def _decode(self, frame: object) -> tuple[str, np.ndarray | None]:
        try:
            data = bytes(frame) if not isinstance(frame, bytes) else frame
            return "ok", decode_jpeg(data, self.max_pixels)
        except InvalidImage as reason:
            return f"invalid_image: {reason}", None

    async def _infer(self, model: str, inputs: list, outputs: list[str]) -> list[np.ndarray]:
        request = pb_utils.InferenceRequest(model_name=model, inputs=inputs, requested_output_names=outputs)
        response = await request.async_exec()
        if response.has_error():
            raise SubModelError(f"{model} failed: {response.error().message()}")
        return [pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs]

    async def _detect(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        boxes, scores = await self._infer(
            self.detector, [pb_utils.Tensor("image", np.ascontiguousarray(image))], ["boxes", "scores"]
        )
        return boxes.reshape(-1, 4), scores.reshape(-1)

    async def _read_plates(self, crops: np.ndarray) -> np.ndarray:
        """STN then LPRNet over all crops of the request: one request each per max_batch_size chunk."""
        chunks = [
            crops[start : start + self.recognizer_max_batch]
            for start in range(0, len(crops), self.recognizer_max_batch)
        ]
        logits = await asyncio.gather(*(self._read_chunk(chunk) for chunk in chunks))
        return np.concatenate(logits)

    async def _read_chunk(self, crops: np.ndarray) -> np.ndarray:
        (rectified,) = await self._infer(self.stn, [pb_utils.Tensor("input", crops)], ["output"])
        (logits,) = await self._infer(self.lprnet, [pb_utils.Tensor("input", rectified)], ["logits"])
        return logits
