"""The worker's motion gate step: which frames of which cameras go to Triton (pure logic, real JPEGs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import cv2
import numpy as np

from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings
from stream_worker.worker.gating import Decided, MotionGating, NotExamined
from stream_worker.worker.validate import Frame, InputRecord

T0 = datetime(2025, 2, 1, 8, tzinfo=UTC)
MOTION = MotionSettings(post_roll_s=1.0, heartbeat_s=5.0)
LEFT_HALF = ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0))


def picture(block: tuple[int, int] | None = None, width: int = 1280, height: int = 720) -> bytes:
    rng = np.random.default_rng(3)
    coarse = rng.integers(60, 200, size=(height // 40, width // 40, 3)).astype(np.uint8)
    image = cv2.resize(coarse, (width, height), interpolation=cv2.INTER_NEAREST)
    if block is not None:  # a vehicle: a bright 200x160 box at (x, y)
        x, y = block
        image[y : y + 160, x : x + 200] = 255
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()


STILL = picture()


class Frames:
    def __init__(self) -> None:
        self.offset = 0

    def __call__(
        self, seconds: float, jpeg: bytes = STILL, camera: str = "cam", captured: bool = True
    ) -> Frame:
        self.offset += 1
        self.last: Frame
        record = InputRecord(
            "frames", 0, self.offset, camera.encode(), jpeg, [], received_at=1000.0 + seconds
        )
        captured_at = T0 + timedelta(seconds=seconds) if captured else None
        self.last = Frame(record, camera, f"f{self.offset}", captured_at, epoch=1)
        return self.last


def gating(settings: dict[str, CameraSettings], max_cameras: int = 16, stride: int = 1) -> MotionGating:
    return MotionGating(lambda camera: settings.get(camera, CameraSettings()), max_cameras, stride)


def examined(gate: MotionGating, frames: list[Frame]) -> list[bool]:
    """Whether each frame goes to Triton, once every frame is decided (held ones when due)."""
    decided: list[Decided] = []
    for frame in frames:
        decided += gate.check(frame, now=0.0)
    decided += gate.due(now=1e9)
    by_offset = {item.frame.record.offset: item.static is None for item in decided}
    assert [item.frame.record.offset for item in decided] == sorted(by_offset), "in offset order"
    return [by_offset[frame.record.offset] for frame in frames]


def test_cameras_without_motion_settings_send_every_frame():
    disabled = CameraSettings(motion=MotionSettings(enabled=False))
    connected = CameraSettings(motion=MOTION, source=CameraSource(url="/videos/gate.mp4"))
    gate = gating({"off": disabled, "src": connected})
    frame = Frames()
    for camera in ("none", "off", "src"):
        assert examined(gate, [frame(0.25 * i, camera=camera) for i in range(8)]) == [True] * 8
    assert len(gate) == 0


def test_still_frames_are_not_examined_but_motion_post_roll_and_heartbeat_are():
    gate = gating({"cam": CameraSettings(motion=MOTION)})
    frame = Frames()
    first = [frame(0.25 * i) for i in range(8)]  # 0 .. 1.75 s
    assert examined(gate, first) == [True] + [False] * 7  # the first: no background yet
    assert gate.check(frame(2.0), now=0.0) == [Decided(gate_frame := frame.last, NotExamined(1280, 720))]
    assert gate_frame.record.offset == 9
    moving = [frame(2.25 + 0.25 * i, picture((100 + 150 * i, 300))) for i in range(4)]
    assert examined(gate, moving) == [True] * 4
    # the vehicle gone: the background had hardly taken it in, so the still frame matches it;
    # a post-roll of 1 s after the last motion (3.0 s), then static
    after = [frame(3.25 + 0.25 * i) for i in range(8)]
    assert examined(gate, after) == [True] * 4 + [False] * 4
    # a heartbeat 5 s after the last frame examined (4.0 s)
    beats = [frame(8.0), frame(9.0), frame(9.25), frame(13.0), frame(14.0)]
    assert examined(gate, beats) == [False, True, False, False, True]


def test_masked_motion_is_not_motion_and_new_masks_start_a_new_gate():
    settings = {"cam": CameraSettings(motion=MOTION, masks=(LEFT_HALF,))}
    gate = gating(settings)
    frame = Frames()
    assert examined(
        gate, [frame(0.0), frame(0.25, picture((100, 300))), frame(0.5, picture((800, 300)))]
    ) == [
        True,
        False,
        True,
    ]
    settings["cam"] = CameraSettings(motion=MOTION)
    assert examined(gate, [frame(0.75), frame(1.0)]) == [True, False]  # a new background, then still


def test_other_changes_of_the_settings_keep_the_gate():
    settings = {"cam": CameraSettings(motion=MOTION)}
    gate = gating(settings)
    frame = Frames()
    assert examined(gate, [frame(0.0), frame(0.25)]) == [True, False]
    settings["cam"] = CameraSettings(motion=MOTION, min_plate_width=40)  # a new object, same gate
    assert examined(gate, [frame(0.5), frame(0.75)]) == [False, False]
    settings["cam"] = CameraSettings(motion=MOTION.model_copy(update={"pixel_threshold": 30}))
    assert examined(gate, [frame(1.0), frame(1.25)]) == [True, False]  # new motion settings: anew


def test_without_captured_at_the_consumption_time_is_the_clock():
    gate = gating({"cam": CameraSettings(motion=MOTION)})
    frame = Frames()
    frames = [frame(0.5 * i, captured=False) for i in range(12)]  # 0 .. 5.5 s
    assert examined(gate, frames) == [True] + [False] * 9 + [True, False]  # heartbeat at 5 s


def test_undecodable_frames_go_to_triton_which_says_what_is_wrong():
    gate = gating({"cam": CameraSettings(motion=MOTION)})
    frame = Frames()
    assert examined(gate, [frame(0.0), frame(0.25, b"not a jpeg"), frame(0.5), frame(0.75)]) == [
        True,
        True,
        False,
        False,
    ]


def test_gates_are_bounded_least_recently_seen_dropped():
    settings = {f"cam-{i}": CameraSettings(motion=MOTION) for i in range(3)}
    gate = gating(settings, max_cameras=2)
    frame = Frames()
    for camera in ("cam-0", "cam-1", "cam-0", "cam-2"):
        gate.check(frame(0.0, camera=camera), now=0.0)
    assert len(gate) == 2
    assert gate.check(frame(0.25, camera="cam-0"), now=0.0)[0].static is not None  # kept: still
    assert gate.check(frame(0.25, camera="cam-1"), now=0.0)[0].static is None  # dropped: a new background


# While static, one frame in two is decoded; a frame passed over waits for the next one.


def test_while_static_every_other_frame_is_passed_over_and_decided_with_the_next():
    gate = gating({"cam": CameraSettings(motion=MOTION)}, stride=2)
    frame = Frames()
    first, second, third = frame(0.0), frame(0.25), frame(0.5)
    assert gate.check(first, now=0.0) == [Decided(first)]  # the first: a heartbeat
    assert gate.check(second, now=0.0) == [Decided(second, NotExamined(1280, 720))]  # static
    assert gate.check(third, now=0.0) == [] and gate.held() == 1  # passed over, held
    fourth = frame(0.75)
    assert gate.check(fourth, now=0.1) == [
        Decided(third, NotExamined(1280, 720)),
        Decided(fourth, NotExamined(1280, 720)),
    ]
    assert gate.held() == 0


def test_a_held_frame_before_motion_is_examined_as_its_pre_roll():
    gate = gating({"cam": CameraSettings(motion=MOTION)}, stride=2)
    frame = Frames()
    frames = [frame(0.25 * i) for i in range(4)]  # heartbeat, static, held, static
    frames += [frame(1.0), frame(1.25, picture((300, 300))), frame(1.5, picture((450, 300)))]
    assert examined(gate, frames) == [True, False, False, False, True, True, True]
    #                                                          held ^ pre-roll of the motion at 1.25


def test_a_held_frame_is_decided_alone_when_its_camera_goes_quiet():
    gate = gating({"cam": CameraSettings(motion=MOTION)}, stride=2)
    frame = Frames()
    for f in (frame(0.0), frame(0.25)):
        gate.check(f, now=10.0)
    held = frame(0.5, picture((300, 300)))  # the van arrives, and the camera stops sending
    assert gate.check(held, now=10.0) == []
    assert gate.due(now=10.5) == []
    assert gate.due(now=11.0) == [Decided(held)]  # decoded at last: motion
    assert gate.held() == 0 and gate.due(now=99.0) == []


def test_a_camera_holding_a_frame_is_not_dropped_for_room():
    settings = {f"cam-{i}": CameraSettings(motion=MOTION) for i in range(3)}
    gate = gating(settings, max_cameras=2, stride=2)
    frame = Frames()
    for seconds in (0.0, 0.25, 0.5):  # cam-0: heartbeat, static, held
        gate.check(frame(seconds, camera="cam-0"), now=0.0)
    for camera in ("cam-1", "cam-2"):
        gate.check(frame(0.0, camera=camera), now=0.0)
    assert gate.held() == 1 and len(gate) == 2  # cam-1 made room, not cam-0
    assert [d.static is not None for d in gate.check(frame(0.75, camera="cam-0"), now=0.0)] == [True, True]


def test_held_frames_are_dropped_with_their_partition_and_with_the_gating_settings():
    settings = {"cam": CameraSettings(motion=MOTION)}
    gate = gating(settings, stride=2)
    frame = Frames()
    for f in (frame(0.0), frame(0.25)):
        gate.check(f, now=0.0)
    assert gate.check(frame(0.5), now=0.0) == []
    gate.drop([("other", 0)])
    assert gate.held() == 1
    gate.drop([("frames", 0)])
    assert gate.held() == 0 and gate.due(now=1e9) == []
    held = frame(0.75)
    assert gate.check(held, now=0.0) == [Decided(held, NotExamined(1280, 720))]  # decoded after a hold
    held = frame(1.0)
    assert gate.check(held, now=0.0) == []
    del settings["cam"]  # gating turned off: the held frame is decided, then every frame goes on
    after = frame(1.25)
    assert gate.check(after, now=0.0) == [Decided(held, NotExamined(1280, 720)), Decided(after)]
    assert len(gate) == 0


def test_a_connector_static_marker_is_not_examined_whatever_the_settings():
    source = CameraSettings(source=CameraSource(url="/a.mp4"), motion=MOTION)
    gate = gating({"cam": source})
    record = InputRecord("frames", 0, 1, b"cam", b"", [("static", b"1920x1080")], received_at=0.0)
    marker = Frame(record, "cam", "m1", T0, epoch=1, static=(1920, 1080))
    assert gate.check(marker, now=0.0) == [Decided(marker, NotExamined(1920, 1080))]
    plain = gating({})  # a camera without any settings: still not examined, nothing to look at
    assert plain.check(marker, now=0.0) == [Decided(marker, NotExamined(1920, 1080))]
