"""plate_recognition: the model clients call. JPEG frames in, recognised plates out (Python BLS).

Per request (one micro-batch of frames):
1. every frame is checked from its JPEG header (size limit `max_pixels`) and decoded, at 1/2, 1/4 or
   1/8 scale when larger than `max_decoded_pixels`; a bad frame gets `invalid_image: <reason>` and
   never fails the other frames. Decoded memory is bounded by `decoded_memory_budget_mb` (see
   budget.py): frames are decoded in waves that fit it (normally one), each wave's full-size pixels
   are released once its plates are cut out, and a frame larger than the whole budget is refused;
2. detection: all frames, letterboxed at every scale of `detector_scales` into canvases of their own
   aspect (detections.py), go to `plate_detector` as one uint8 request per canvas shape (chunked
   only beyond `detector_max_batch`), which answers each canvas's best rows; boxes, corners and
   scores are thresholded, suppressed (NMS) and mapped back to each frame's pixels. A frame's optional
   `detector_scales` input (b"" = the model's) gives it scales of its own, e.g. 1.0,0.5,3.0 for a dash
   camera's small plates; frames sharing scales are drawn together. With `detector: haar` the
   fallback `haar_detector` runs instead, one request per frame;
3. each plate is read by the recognizers its frame asks for in the optional `plate_recognizers`
   input (recognizers.py; absent or b"" = `lprnet`): for `lprnet` it is warped flat from its four
   corners into the 94x24 input, and all such plates of all frames go as ONE `stn` request and ONE
   `lprnet` request; for `global` it is warped into a 128x64 RGB crop with its own margins, and all
   such plates go as ONE `global_ocr` request, at the same time (each chunked only beyond their
   max_batch_size; Triton's dynamic batcher may merge them further with other requests). A frame
   whose optional `frame_is_plate` input is true is itself a plate crop: it is not shown to the
   detector, its one plate is the whole image (detection score 1.0, single row), read without
   margins by LPRNet and with the whole-plate margins by global_ocr;
4. decoding: `plate_text` is LPRNet's greedy CTC reading when it ran and read something, else
   global_ocr's most probable class per slot, pads dropped. `plate_confidence` is the minimum over
   the plate's characters of each character's softmax probability (the plate is only as sure as its
   least sure character); `plate_character_confidences` holds those per-character values, all plates
   flattened in order (plate i owns as many as its text has characters). Plates no recognizer read
   anything of are dropped. `plate_lprnet_probs` (LPRNet's softmax per time step) and
   `plate_global_probs` (global_ocr's per slot) let the caller read through a plate format; zeros
   where that recognizer did not run, which `plate_recognizers` says per plate;
   Before anything is cut out, the plates of a frame whose optional `plate_masks` input names
   polygons are dropped when their box centre lies inside one (masks.py), and counted in
   `frame_masked`: a masked plate costs its detection only;
5. only for frames whose optional `plate_images` input is true: each plate's picture, warped flat
   from the decoded frame while its pixels are alive and JPEG-encoded once its reading is kept
   (pictures.py), in `plate_image`; b"" for the others. A request without the input costs nothing.
A failing sub-model fails the whole request with a TritonError (the client retries the batch).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import numpy as np
import triton_python_backend_utils as pb_utils
from budget import MemoryBudget, waves
from contract import (
    DETECTOR_IMAGES,
    DETECTOR_ROW_WIDTH,
    DETECTOR_ROWS,
    DETECTOR_SCALES,
    FRAME_IS_PLATE,
    GLOBAL,
    GLOBAL_CLASSES,
    GLOBAL_OCR_INPUT,
    GLOBAL_OCR_OUTPUT,
    GLOBAL_SLOTS,
    IMAGES,
    LPRNET,
    LPRNET_CLASSES,
    LPRNET_STEPS,
    PLATE_IMAGES,
    PLATE_MASKS,
    PLATE_RECOGNIZERS,
    output_arrays,
)
from detections import (
    DEFAULT_MARGINS,
    DEFAULT_SCALES,
    DOUBLE_ROW,
    SINGLE_ROW,
    Detections,
    box_corners,
    canvases_for,
    frame_detections,
    frame_scales,
    parse_margins,
    parse_scales,
    usable_corners,
)
from frames import (
    DEFAULT_MAX_DECODED_PIXELS,
    DEFAULT_MAX_PIXELS,
    GLOBAL_HORIZONTAL_MARGIN,
    GLOBAL_VERTICAL_MARGIN,
    WHOLE_GLOBAL_HORIZONTAL_MARGIN,
    WHOLE_GLOBAL_VERTICAL_MARGIN,
    DecodePlan,
    InvalidImage,
    ctc_greedy_decode,
    decode_planned,
    global_crop,
    image_corners,
    plan_decode,
    plate_confidence,
    plate_tensor,
    softmax,
)
from heap import keep_freed_memory
from masks import Polygon, masked_plates, parse_masks
from pictures import encode_bounded, plate_picture
from recognizers import parse_recognizers, plate_reading

DEFAULT_DECODED_MEMORY_BUDGET_MB = 128
DETECTORS = ("yolo", "haar")


class SubModelError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Asked:
    """What a request asks per frame besides its JPEG (the optional inputs)."""

    pictures: np.ndarray | None  # bool per frame, None when no frame asks
    masks: list[tuple[Polygon, ...]] | None  # polygons per frame, None when no frame has any
    recognizers: list[tuple[str, ...]]  # names per frame (recognizers.py)
    frame_is_plate: np.ndarray | None  # bool per frame: the frame is itself a plate; None when none is
    scales: list[tuple[tuple[float, ...], tuple[int, ...]]]  # detector (scales, margins) per frame


@dataclass(frozen=True, slots=True)
class Cut:
    """One plate cut out of its decoded frame: the inputs of the recognizers its frame asked for."""

    lprnet: np.ndarray | None  # [3, 24, 94] float32
    global_: np.ndarray | None  # [64, 128, 3] uint8 RGB
    picture: np.ndarray | None  # its picture's pixels when its frame asked


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        self.max_pixels = int(parameters.get("max_pixels", DEFAULT_MAX_PIXELS))
        self.max_decoded_pixels = int(parameters.get("max_decoded_pixels", DEFAULT_MAX_DECODED_PIXELS))
        budget_mb = int(parameters.get("decoded_memory_budget_mb", DEFAULT_DECODED_MEMORY_BUDGET_MB))
        self.budget = MemoryBudget(budget_mb * 2**20)
        keep_freed_memory(self.budget.capacity)  # no page faults per request (heap.py)
        self.detector_kind = parameters.get("detector", "yolo")
        if self.detector_kind not in DETECTORS:
            raise pb_utils.TritonModelException(
                f"plate_recognition: detector {self.detector_kind!r} is not one of {', '.join(DETECTORS)}"
            )
        self.detector = parameters.get("detector_model", "plate_detector")
        self.haar_detector = parameters.get("haar_detector_model", "haar_detector")
        self.scales = parse_scales(parameters.get("detector_scales", DEFAULT_SCALES))
        self.margins = parse_margins(parameters.get("detector_margins", DEFAULT_MARGINS), len(self.scales))
        self.score_threshold = float(parameters.get("score_threshold", 0.25))
        self.nms_iou = float(parameters.get("nms_iou", 0.5))
        self.detector_max_batch = int(parameters.get("detector_max_batch", 32))
        self.vertical_margin = float(parameters.get("crop_vertical_margin", 0.2))
        self.horizontal_margin = float(parameters.get("crop_horizontal_margin", 0.08))
        self.stn = parameters.get("stn_model", "stn")
        self.lprnet = parameters.get("lprnet_model", "lprnet")
        self.global_ocr = parameters.get("global_ocr_model", "global_ocr")
        self.global_vertical_margin = float(
            parameters.get("global_crop_vertical_margin", GLOBAL_VERTICAL_MARGIN)
        )
        self.global_horizontal_margin = float(
            parameters.get("global_crop_horizontal_margin", GLOBAL_HORIZONTAL_MARGIN)
        )
        self.whole_global_margins = (
            float(parameters.get("whole_plate_global_vertical_margin", WHOLE_GLOBAL_VERTICAL_MARGIN)),
            float(parameters.get("whole_plate_global_horizontal_margin", WHOLE_GLOBAL_HORIZONTAL_MARGIN)),
        )
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
        frames = [
            self._bytes(frame)
            for frame in pb_utils.get_input_tensor_by_name(request, IMAGES.name).as_numpy().reshape(-1)
        ]
        asked = Asked(
            pictures=self._flags(request, PLATE_IMAGES.name, len(frames)),
            masks=self._masks(request, len(frames)),
            recognizers=parse_recognizers(self._values(request, PLATE_RECOGNIZERS.name), len(frames)),
            frame_is_plate=self._flags(request, FRAME_IS_PLATE.name, len(frames)),
            scales=frame_scales(
                self._values(request, DETECTOR_SCALES.name), len(frames), self.scales, self.margins
            ),
        )
        statuses = ["ok"] * len(frames)
        sizes = np.zeros((len(frames), 2), np.int32)
        masked = np.zeros(len(frames), np.int32)
        plans: dict[int, DecodePlan] = {}
        for index, frame in enumerate(frames):
            try:
                plan = plan_decode(frame, self.max_pixels, self.max_decoded_pixels)
            except InvalidImage as reason:
                statuses[index] = f"invalid_image: {reason}"
                continue
            if plan.memory_bytes > self.budget.capacity:
                statuses[index] = (
                    f"invalid_image: decoding {plan.header.width}x{plan.header.height} needs "
                    f"{plan.memory_bytes / 2**20:.0f} MiB, more than decoded_memory_budget_mb="
                    f"{self.budget.capacity // 2**20}"
                )
                continue
            plans[index] = plan

        plate_frames: list[int] = []
        found: list[Detections] = []
        cuts: list[Cut] = []
        order = list(plans)
        for wave in waves([plans[i].memory_bytes for i in order], self.budget.capacity):
            indices = [order[i] for i in wave]
            async with self.budget.hold(sum(plans[i].memory_bytes for i in indices)):
                # The wave's full-size pixels live only inside this call: gone before the release.
                for index, frame_plates, frame_cuts in await self._cut_plates(
                    frames, plans, indices, statuses, asked, masked
                ):
                    sizes[index] = (plans[index].header.width, plans[index].header.height)
                    plate_frames.extend([index] * len(frame_plates))
                    found.append(frame_plates)
                    cuts.extend(frame_cuts)
        plates = Detections.concatenate(found)
        lprnet_readings, lprnet_probs, global_probs = await self._read_all(cuts)

        kept, texts, confidences, character_confidences, read_by = [], [], [], [], []
        for i, frame in enumerate(plate_frames):
            global_read = global_probs[i] if cuts[i].global_ is not None else None
            text, characters = plate_reading(lprnet_readings.get(i), global_read)
            if not text:
                continue
            kept.append(i)
            texts.append(text.encode())
            confidences.append(plate_confidence(characters))
            character_confidences.extend(characters)
            read_by.append(",".join(asked.recognizers[frame]).encode())
        kept_plates = plates.take(np.array(kept, np.int64))
        kept_pictures = [cuts[i].picture for i in kept]
        if any(picture is not None for picture in kept_pictures):
            images = await asyncio.to_thread(self._encode_pictures, kept_pictures)
        else:
            images = [b""] * len(kept)

        values = {
            "plate_frame": [plate_frames[i] for i in kept],
            "plate_box": kept_plates.boxes.reshape(-1, 4),
            "plate_corners": kept_plates.corners.reshape(-1, 4, 2),
            "plate_text": texts,
            "plate_confidence": confidences,
            "plate_character_confidences": character_confidences,
            "plate_detection_score": kept_plates.scores,
            "plate_layout": [(DOUBLE_ROW if d else SINGLE_ROW).encode() for d in kept_plates.double_row],
            "plate_image": images,
            "plate_lprnet_probs": lprnet_probs[kept],
            "plate_global_probs": global_probs[kept],
            "plate_recognizers": read_by,
            "frame_status": [s.encode() for s in statuses],
            "frame_size": sizes,
            "frame_masked": masked,
        }
        return pb_utils.InferenceResponse(
            output_tensors=[pb_utils.Tensor(name, array) for name, array in output_arrays(values)]
        )

    async def _cut_plates(
        self,
        frames: list[bytes],
        plans: dict[int, DecodePlan],
        indices: list[int],
        statuses: list[str],
        asked: Asked,
        masked: np.ndarray,
    ) -> list[tuple[int, Detections, list[Cut]]]:
        """Decode these frames, find their plates and cut the plates out: per decoded frame, its
        plates (in its full-size pixels) and their `Cut`s (the inputs of the recognizers the frame
        asks for and, where it asks for pictures, their pixels). A frame that is itself a plate
        (`asked.frame_is_plate`) is not detected: its plate is the whole image (margins: `_cut`).
        Plates inside the frame's masks are dropped first and counted in `masked`. Failed decodes set
        `statuses`."""
        images = await asyncio.gather(
            *(asyncio.to_thread(self._decode, frames[i], plans[i]) for i in indices)
        )
        decoded = []
        for index, image in zip(indices, images, strict=True):
            if isinstance(image, str):
                statuses[index] = image
            else:
                decoded.append((index, image))
        is_plate = [
            asked.frame_is_plate is not None and bool(asked.frame_is_plate[index]) for index, _ in decoded
        ]
        scenes = [
            (image, asked.scales[i]) for (i, image), whole in zip(decoded, is_plate, strict=True) if not whole
        ]
        detected = iter(await self._detect_all(scenes))
        result = []
        for (index, image), whole in zip(decoded, is_plate, strict=True):
            plates = self._whole_image_plate(image) if whole else next(detected)
            if asked.masks is not None and asked.masks[index]:
                hidden = masked_plates(plates.boxes, asked.masks[index], image.shape[1], image.shape[0])
                masked[index] = int(hidden.sum())
                plates = plates.take(np.flatnonzero(~hidden))
            corners = np.array(
                [usable_corners(c, b) for c, b in zip(plates.corners, plates.boxes, strict=True)], np.float32
            ).reshape(-1, 4, 2)
            cuts = [self._cut(image, c, asked, index, whole) for c in corners]
            width, height = plans[index].size
            header = plans[index].header
            plates = Detections(plates.boxes, corners, plates.scores, plates.double_row)
            scaled = plates.scaled(header.width / width, header.height / height)
            result.append((index, scaled, cuts))
        return result

    def _cut(self, image: np.ndarray, corners: np.ndarray, asked: Asked, frame: int, whole: bool) -> Cut:
        """One plate's recognizer inputs (and picture). A frame that is a plate has no margins for
        LPRNet and its picture, and the whole-plate margins for global_ocr (frames.py)."""
        vertical, horizontal = (0.0, 0.0) if whole else (self.vertical_margin, self.horizontal_margin)
        names = asked.recognizers[frame]
        if GLOBAL in names:
            global_margins = (
                self.whole_global_margins
                if whole
                else (self.global_vertical_margin, self.global_horizontal_margin)
            )
            global_input = global_crop(image, corners, *global_margins)
        else:
            global_input = None
        picture = asked.pictures is not None and asked.pictures[frame]
        return Cut(
            lprnet=plate_tensor(image, corners, vertical, horizontal) if LPRNET in names else None,
            global_=global_input,
            picture=plate_picture(image, corners, vertical, horizontal) if picture else None,
        )

    @staticmethod
    def _whole_image_plate(image: np.ndarray) -> Detections:
        """A frame that is itself a plate crop: one single-row plate, the whole image, score 1.0."""
        height, width = image.shape[:2]
        return Detections(
            np.array([[0, 0, width, height]], np.float32),
            image_corners(width, height)[None],
            np.ones(1, np.float32),
            np.zeros(1, bool),
        )

    @staticmethod
    def _values(request: object, name: str) -> np.ndarray | None:
        """An optional input's values, flattened; None when the request lacks it."""
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        return None if tensor is None else tensor.as_numpy().reshape(-1)

    @classmethod
    def _flags(cls, request: object, name: str, frames: int) -> np.ndarray | None:
        """An optional BOOL input as one bool per frame; None when absent or all false."""
        values = cls._values(request, name)
        if values is None:
            return None
        flags = values.astype(bool)
        if len(flags) != frames:
            raise ValueError(f"{name} has {len(flags)} values for {frames} frames")
        return flags if flags.any() else None

    @staticmethod
    def _masks(request: object, frames: int) -> list[tuple[Polygon, ...]] | None:
        """The optional `plate_masks` input as polygons per frame; None when absent or all empty."""
        tensor = pb_utils.get_input_tensor_by_name(request, PLATE_MASKS.name)
        if tensor is None:
            return None
        values = tensor.as_numpy().reshape(-1)
        if len(values) != frames:
            raise ValueError(f"{PLATE_MASKS.name} has {len(values)} values for {frames} frames")
        masks = [parse_masks(bytes(value)) for value in values]
        return masks if any(masks) else None

    @staticmethod
    def _encode_pictures(pictures: list[np.ndarray | None]) -> list[bytes]:
        return [b"" if picture is None else encode_bounded(picture) for picture in pictures]

    @staticmethod
    def _bytes(frame: object) -> bytes:
        return frame if isinstance(frame, bytes) else bytes(frame)

    @staticmethod
    def _decode(frame: bytes, plan: DecodePlan) -> np.ndarray | str:
        """The decoded frame, or its `invalid_image` status."""
        try:
            return decode_planned(frame, plan)
        except InvalidImage as reason:
            return f"invalid_image: {reason}"

    async def _detect_all(
        self, scenes: list[tuple[np.ndarray, tuple[tuple[float, ...], tuple[int, ...]]]]
    ) -> list[Detections]:
        """Each frame's plates, at its own (scales, margins) for the learned detector: frames that
        share them are drawn together (normally all of them: one group)."""
        if self.detector_kind != "yolo":
            return list(await asyncio.gather(*(self._detect_haar(image) for image, _ in scenes)))
        groups: dict[tuple[tuple[float, ...], tuple[int, ...]], list[int]] = {}
        for index, (_, scales) in enumerate(scenes):
            groups.setdefault(scales, []).append(index)
        found = await asyncio.gather(
            *(
                self._detect([scenes[i][0] for i in indices], scales, margins)
                for (scales, margins), indices in groups.items()
            )
        )
        result: list[Detections] = [Detections.empty()] * len(scenes)
        for indices, detections in zip(groups.values(), found, strict=True):
            for index, frame_detections_ in zip(indices, detections, strict=True):
                result[index] = frame_detections_
        return result

    async def _infer(self, model: str, inputs: list, outputs: list[str]) -> list[np.ndarray]:
        request = pb_utils.InferenceRequest(model_name=model, inputs=inputs, requested_output_names=outputs)
        response = await request.async_exec()
        if response.has_error():
            raise SubModelError(f"{model} failed: {response.error().message()}")
        return [pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs]

    async def _detect(
        self, images: list[np.ndarray], scales: tuple[float, ...], margins: tuple[int, ...]
    ) -> list[Detections]:
        """These frames at these scales through `plate_detector`: one request per canvas shape (split
        beyond `detector_max_batch`), so that Triton batches same-shape canvases together."""
        if not images:
            return []
        canvases = await asyncio.to_thread(canvases_for, images, scales, margins)
        chunks = [
            (
                batch.views[start : start + self.detector_max_batch],
                batch.pixels[start : start + self.detector_max_batch],
            )
            for batch in canvases.batches
            for start in range(0, len(batch.views), self.detector_max_batch)
        ]
        outputs = await asyncio.gather(
            *(
                self._infer(
                    self.detector, [pb_utils.Tensor(DETECTOR_IMAGES.name, pixels)], [DETECTOR_ROWS.name]
                )
                for _, pixels in chunks
            )
        )
        rows = [np.zeros((0, DETECTOR_ROW_WIDTH), np.float32)] * len(canvases.placements)
        for (views, _), (detections,) in zip(chunks, outputs, strict=True):
            for view, view_rows in zip(views, detections, strict=True):
                rows[view] = view_rows
        sizes = [(image.shape[1], image.shape[0]) for image in images]
        return frame_detections(
            rows, canvases.placements, sizes, len(scales), self.score_threshold, self.nms_iou
        )

    async def _detect_haar(self, image: np.ndarray) -> Detections:
        boxes, scores = await self._infer(
            self.haar_detector, [pb_utils.Tensor("image", np.ascontiguousarray(image))], ["boxes", "scores"]
        )
        boxes = boxes.reshape(-1, 4).astype(np.float32)
        corners = np.array([box_corners(box) for box in boxes], np.float32).reshape(-1, 4, 2)
        return Detections(boxes, corners, scores.reshape(-1).astype(np.float32), np.zeros(len(boxes), bool))

    async def _read_all(
        self, cuts: list[Cut]
    ) -> tuple[dict[int, tuple[str, list[float]]], np.ndarray, np.ndarray]:
        """Every plate through the recognizers its frame asked for, both at once: LPRNet's greedy
        CTC reading by plate index, and both recognizers' probabilities per plate (zeros where one
        did not run)."""
        lprnet_rows = [i for i, cut in enumerate(cuts) if cut.lprnet is not None]
        global_rows = [i for i, cut in enumerate(cuts) if cut.global_ is not None]
        logits, global_read = await asyncio.gather(
            self._read_lprnet([cuts[i].lprnet for i in lprnet_rows]),
            self._read_global([cuts[i].global_ for i in global_rows]),
        )
        lprnet_probs = np.zeros((len(cuts), LPRNET_STEPS, LPRNET_CLASSES), np.float32)
        global_probs = np.zeros((len(cuts), GLOBAL_SLOTS, GLOBAL_CLASSES), np.float32)
        readings = {}
        for i, plate_logits in zip(lprnet_rows, logits, strict=True):
            readings[i] = ctc_greedy_decode(plate_logits)
            lprnet_probs[i] = softmax(plate_logits.astype(np.float64), axis=0).T
        global_probs[global_rows] = global_read
        return readings, lprnet_probs, global_probs

    async def _read_lprnet(self, crops: list[np.ndarray]) -> np.ndarray:
        """STN then LPRNet over these crops: CTC logits [N, 23, 18]."""
        return await self._read_chunked(crops, self._read_lprnet_chunk, (0, LPRNET_CLASSES, LPRNET_STEPS))

    async def _read_global(self, crops: list[np.ndarray]) -> np.ndarray:
        """global_ocr over these crops: softmax per slot [N, 9, 37]."""
        return await self._read_chunked(crops, self._read_global_chunk, (0, GLOBAL_SLOTS, GLOBAL_CLASSES))

    async def _read_chunked(self, crops: list[np.ndarray], read, empty: tuple[int, ...]) -> np.ndarray:
        """All crops of the request through one recognizer: one request per max_batch_size chunk."""
        if not crops:
            return np.zeros(empty, np.float32)
        batch = np.stack(crops)
        chunks = [
            batch[start : start + self.recognizer_max_batch]
            for start in range(0, len(batch), self.recognizer_max_batch)
        ]
        return np.concatenate(await asyncio.gather(*(read(chunk) for chunk in chunks)))

    async def _read_lprnet_chunk(self, crops: np.ndarray) -> np.ndarray:
        (rectified,) = await self._infer(self.stn, [pb_utils.Tensor("input", crops)], ["output"])
        (logits,) = await self._infer(self.lprnet, [pb_utils.Tensor("input", rectified)], ["logits"])
        return logits

    async def _read_global_chunk(self, crops: np.ndarray) -> np.ndarray:
        (probabilities,) = await self._infer(
            self.global_ocr, [pb_utils.Tensor(GLOBAL_OCR_INPUT.name, crops)], [GLOBAL_OCR_OUTPUT.name]
        )
        return probabilities
