"""Grouping reads into vehicle passes: joining by text or motion, closing by gap, duration, silence."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plate_events import T0, Pass, as_observation, read, seen, timeline

from stream_worker.contracts import ClosedBy
from stream_worker.sightings.grouping import Closed, Grouper, GroupingRules
from stream_worker.sightings.reads import Observation

RULES = GroupingRules()  # the defaults: gap 1.5 s, silence 10 s, max 30 s, 2 edits, 1.5 widths


def run(events, rules: GroupingRules = RULES, partition: int = 0) -> list[Closed]:
    """Every event through one grouper, then a long silence: every group it closed, in order."""
    grouper = Grouper(rules)
    closed: list[Closed] = []
    for offset, event in enumerate(events):
        closed += grouper.observe(partition, as_observation(event, partition, offset), now=0.0)[0]
    closed += grouper.expire(now=1e9)
    assert not list(grouper.open_groups())
    return closed


def texts(closed: list[Closed]) -> list[set[str]]:
    return [{r.text for r in c.group.reads} for c in closed]


def test_one_pass_is_one_group_closed_by_the_gap():
    vehicle = Pass("cam", "A123BC77", T0, frames=10)
    closed = run(timeline([vehicle], "cam", until=vehicle.end + 3))
    assert len(closed) == 1
    assert closed[0].reason is ClosedBy.GAP
    assert len(closed[0].group.reads) == 10
    assert (closed[0].group.first_time, closed[0].group.last_time) == (T0, pytest.approx(vehicle.end))


def test_misreads_by_one_or_two_characters_join_by_text():
    vehicle = Pass("cam", "A123BC77", T0, frames=10, misreads={2: "A123BC177", 5: "A128BO77", 7: "A123B77"})
    closed = run(timeline([vehicle], "cam", until=vehicle.end + 3))
    assert texts(closed) == [{"A123BC77", "A123BC177", "A128BO77", "A123B77"}]


def test_a_blurred_read_joins_by_the_box_continuing_the_motion():
    vehicle = Pass("cam", "A123BC77", T0, frames=10, dx=30, misreads={5: "A1Z3XC7Y"})  # 3 edits
    closed = run(timeline([vehicle], "cam", until=vehicle.end + 3))
    assert len(closed) == 1 and "A1Z3XC7Y" in texts(closed)[0]


def test_the_next_vehicle_s_plate_where_the_last_one_entered_is_a_new_group():
    """It appears where the last plate was, not where that plate's motion has taken it."""
    vehicle = Pass("cam", "A123BC77", T0, frames=6, dy=40)
    grouper = Grouper(RULES)
    for offset, event in enumerate(timeline([vehicle], "cam", until=vehicle.end)):
        grouper.observe(0, as_observation(event, 0, offset), 0.0)
    follower = read("K456MH199", vehicle.end + 0.2, box=vehicle.at(3)[1], offset=99)
    _, [(_, group)] = grouper.observe(0, seen("cam", follower.time, follower), 0.0)
    assert group.reads == [follower]


def test_a_read_garbled_beyond_recognition_joins_only_right_where_the_plate_is():
    vehicle = Pass("cam", "A123BC77", T0, frames=6, dy=40, grow=1.0)
    predicted = vehicle.at(6)[1]  # where the motion puts the plate one frame later
    for shift, joins in ((0.3, True), (0.8, False)):  # in plate widths
        grouper = Grouper(RULES)
        for offset, event in enumerate(timeline([vehicle], "cam", until=vehicle.end)):
            grouper.observe(0, as_observation(event, 0, offset), 0.0)
        box = (predicted[0] + 100 * shift, predicted[1], predicted[2] + 100 * shift, predicted[3])
        noise = read("XX9", vehicle.end + 0.2, box=box, offset=99)
        _, [(_, group)] = grouper.observe(0, seen("cam", noise.time, noise), 0.0)
        assert (len(group.reads) == 7) is joins, shift
        # A read still half like the plate's may lie further off.
        half = read("A1Z3XC7Y", vehicle.end + 0.2, box=box, offset=99)
        grouper = Grouper(RULES)
        for offset, event in enumerate(timeline([vehicle], "cam", until=vehicle.end)):
            grouper.observe(0, as_observation(event, 0, offset), 0.0)
        _, [(_, group)] = grouper.observe(0, seen("cam", half.time, half), 0.0)
        assert len(group.reads) == 7


def test_two_vehicles_in_view_together_stay_apart():
    a = Pass("cam", "A123BC77", T0, frames=12, box=(200, 500, 300, 530), dx=20)
    b = Pass("cam", "K456MH199", T0 + 0.4, frames=12, box=(900, 300, 1000, 330), dx=-20)
    closed = run(timeline([a, b], "cam", until=b.end + 3))
    assert sorted(map(sorted, texts(closed))) == [["A123BC77"], ["K456MH199"]]
    assert all(len(c.group.reads) == 12 for c in closed)


def test_a_vehicle_following_closely_is_a_new_group():
    """B enters where A entered, 0.4 s after A was last read: a new text and far from A's motion."""
    a = Pass("cam", "A123BC77", T0, frames=8, dy=60)
    b = Pass("cam", "A128BC71", a.end + 0.4, frames=8, dy=60)  # 2 edits from A's text!
    events = timeline([a, b], "cam", until=b.end + 3)
    closed = run(events, GroupingRules(max_edit_distance=1))
    assert [len(c.group.reads) for c in closed] == [8, 8]
    assert [texts(closed)[0], texts(closed)[1]] == [{"A123BC77"}, {"A128BC71"}]


def test_similar_texts_join_only_within_the_gap():
    first = Pass("cam", "A123BC77", T0, frames=5)
    again = Pass("cam", "A123BC77", first.end + 1.6, frames=5)  # the same car back after 1.6 s
    closed = run(timeline([first, again], "cam", until=again.end + 3))
    assert [len(c.group.reads) for c in closed] == [5, 5]
    just_in_time = Pass("cam", "A123BC77", first.end + 1.4, frames=5)
    assert [len(c.group.reads) for c in run(timeline([first, just_in_time], "cam", until=T0 + 10))] == [10]


def test_out_of_order_reads_within_the_gap_join_their_pass():
    vehicle = Pass("cam", "A123BC77", T0, frames=10)
    events = timeline([vehicle], "cam", until=vehicle.end + 3)
    events[2], events[5] = events[5], events[2]
    events[6], events[7] = events[7], events[6]
    closed = run(events)
    assert len(closed) == 1 and len(closed[0].group.reads) == 10
    assert closed[0].group.first_time == T0


def test_a_read_later_than_the_gap_cannot_reopen_its_pass():
    vehicle = Pass("cam", "A123BC77", T0, frames=6)
    events = timeline([vehicle], "cam", until=vehicle.end + 3)
    late = events.pop(3)  # arrives after the pass closed
    events.append(late)
    closed = run(events)
    assert [len(c.group.reads) for c in closed] == [5, 1]


def test_a_vehicle_in_view_longer_than_max_group_s_is_reported_again():
    rules = GroupingRules(max_group_s=3.0)
    parked = Pass("cam", "A123BC77", T0, frames=40, dy=0, grow=1.0)  # 7.8 s in view
    closed = run(timeline([parked], "cam", until=parked.end + 3), rules)
    assert [c.reason for c in closed] == [ClosedBy.MAX_DURATION, ClosedBy.MAX_DURATION, ClosedBy.GAP]
    assert sum(len(c.group.reads) for c in closed) == 40
    assert all(c.group.last_time - c.group.first_time <= 3.0 for c in closed)


def test_silence_closes_what_camera_time_cannot():
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), now=100.0)
    assert grouper.expire(now=109.9) == []
    [closed] = grouper.expire(now=110.1)
    assert closed.reason is ClosedBy.SILENCE


def test_a_camera_clock_set_back_closes_its_groups():
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), 0.0)
    closed, _ = grouper.observe(0, seen("cam", T0 - 3600, read("A123BC77", T0 - 3600, offset=1)), 0.0)
    assert [c.reason for c in closed] == [ClosedBy.GAP]
    # ... and the camera goes on from its new time.
    closed, placed = grouper.observe(
        0, seen("cam", T0 - 3599.8, read("A123BC77", T0 - 3599.8, offset=2)), 0.0
    )
    assert closed == [] and len(placed[0][1].reads) == 2


def not_examined(camera_id: str, time: float) -> Observation:
    """A frame the worker's motion gate kept from the recognizer."""
    return Observation(camera_id, time, (), examined=False)


def standing_vehicle(examined: bool) -> list[Observation]:
    """A vehicle drives up (1.4 s of reads), stands still for 8 s (frames not examined, or, for
    contrast, examined and empty), is read by a heartbeat frame, stands 8 s more, drives off."""
    observations: list[Observation] = []
    offset = 0

    def frame(time: float, text: str | None) -> None:
        nonlocal offset
        offset += 1
        if text is not None:
            observations.append(seen("cam", time, read(text, time, offset=offset)))
        elif examined:
            observations.append(seen("cam", time))
        else:
            observations.append(not_examined("cam", time))

    steps = [(0.2 * k, "A123BC77") for k in range(8)]  # 0 .. 1.4 s
    steps += [(1.6 + 0.2 * k, None) for k in range(40)]  # .. 9.4 s
    steps += [(9.6, "A123BC77")]  # the heartbeat
    steps += [(9.8 + 0.2 * k, None) for k in range(40)]  # .. 17.6 s
    steps += [(17.8 + 0.2 * k, "A123BC77") for k in range(5)]  # drives off
    steps += [(18.8 + 0.2 * k, None) for k in range(5)]
    for time, text in steps:
        frame(T0 + time, text)
    return observations


def test_frames_not_examined_do_not_split_a_pass():
    grouper = Grouper(RULES)
    closed: list[Closed] = []
    for offset, observation in enumerate(standing_vehicle(examined=False)):
        closed += grouper.observe(0, observation, now=offset * 0.2)[0]
    assert closed == []  # nothing closed while the vehicle stands, however long
    tail = [seen("cam", T0 + 20.0 + 0.2 * k) for k in range(10)]  # examined empty frames
    for observation in tail:
        closed += grouper.observe(0, observation, now=100.0)[0]
    [one] = closed
    assert one.reason is ClosedBy.GAP and len(one.group.reads) == 14
    assert (one.group.first_time, one.group.last_time) == (T0, pytest.approx(T0 + 18.6))
    # the same frames looked at and found empty: the plate has gone, three passes
    grouper = Grouper(RULES)
    contrast = [c for o in standing_vehicle(examined=True) for c in grouper.observe(0, o, 0.0)[0]]
    contrast += grouper.expire(now=1e9)
    assert [len(c.group.reads) for c in contrast] == [8, 1, 5]


def test_frames_not_examined_close_nothing_but_keep_the_camera_alive():
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), now=100.0)
    for k in range(1, 60):  # 59 s of static frames, one a second of wall time
        assert grouper.observe(0, not_examined("cam", T0 + k), now=100.0 + k) == ([], [])
        assert grouper.expire(now=100.0 + k + 0.5) == []
    [closed] = grouper.expire(now=159.0 + RULES.silence_s + 0.1)  # then nothing at all
    assert closed.reason is ClosedBy.SILENCE


def test_frames_not_examined_still_count_towards_max_group_s():
    grouper = Grouper(RULES)  # max_group_s 30
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), 0.0)
    for k in range(1, 40):
        grouper.observe(0, not_examined("cam", T0 + k), 0.0)
    closed, placed = grouper.observe(0, seen("cam", T0 + 40, read("A123BC77", T0 + 40, offset=1)), 0.0)
    assert [c.reason for c in closed] == [ClosedBy.MAX_DURATION]
    assert placed[0][1] is not closed[0].group


def test_a_frame_gives_a_group_one_read():
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), 0.0)
    twins = (read("A123BC77", T0 + 0.2, offset=1), read("A123BC77", T0 + 0.2, offset=1, index=1))
    _, placed = grouper.observe(0, seen("cam", T0 + 0.2, *twins), 0.0)
    assert placed[0][1] is not placed[1][1]


def test_the_closest_pair_wins_when_reads_could_join_several_groups():
    grouper = Grouper(RULES)
    grouper.observe(
        0, seen("cam", T0, read("A123BC77", T0), read("A123BC79", T0, index=1, box=(600, 100, 700, 130))), 0.0
    )
    [a, b] = list(grouper.open_groups())
    _, placed = grouper.observe(
        0,
        seen(
            "cam",
            T0 + 0.2,
            read("A123BC79", T0 + 0.2, offset=1),
            read("A123BC77", T0 + 0.2, offset=1, index=1),
        ),
        0.0,
    )
    assert placed[0][1] is b and placed[1][1] is a  # by text, wherever the boxes are


def test_cameras_and_partitions_never_share_groups():
    grouper = Grouper(RULES)
    _, [(_, one)] = grouper.observe(0, seen("cam-1", T0, read("A123BC77", T0)), 0.0)
    _, [(_, two)] = grouper.observe(0, seen("cam-2", T0, read("A123BC77", T0)), 0.0)
    _, [(_, three)] = grouper.observe(1, seen("cam-1", T0, read("A123BC77", T0, partition=1)), 0.0)
    assert len({id(one), id(two), id(three)}) == 3
    assert len(grouper.forget(0)) == 2
    assert list(grouper.open_groups()) == [three]


def test_rules_are_checked():
    with pytest.raises(ValueError):
        GroupingRules(gap_s=40.0, max_group_s=30.0)
    with pytest.raises(ValueError):
        GroupingRules(silence_s=0)


# --- properties ------------------------------------------------------------------------------

LETTERS = "ABEKMHOPCTYX"


@st.composite
def traffic(draw):
    """Vehicles of one camera one after another, with distinct plates and a few misreads each."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    count = draw(st.integers(1, 6))
    passes, start, used = [], T0, set()
    for _ in range(count):
        while (
            text := rng.choice(LETTERS)
            + f"{rng.randrange(1000):03d}"
            + "".join(rng.choices(LETTERS, k=2))
            + f"{rng.randrange(10, 200)}"
        ) in used:
            pass
        used.add(text)
        frames = draw(st.integers(2, 25))
        misreads = {}
        for frame in range(frames):
            if rng.random() < 0.2:
                i = rng.randrange(len(text))
                misreads[frame] = text[:i] + rng.choice("0123456789" + LETTERS) + text[i + 1 :]
        passes.append(
            Pass(
                "cam",
                text,
                start,
                frames=frames,
                period_s=draw(st.sampled_from([0.033, 0.1, 0.2])),
                misreads=misreads,
            )
        )
        start = passes[-1].end + draw(st.floats(1.6, 10.0))
    return passes


@settings(max_examples=40, deadline=None)
@given(traffic())
def test_vehicles_separated_by_more_than_the_gap_give_one_group_each(passes):
    closed = run(timeline(passes, "cam", until=passes[-1].end + 3))
    assert [len(c.group.reads) for c in closed] == [p.frames for p in passes]
    assert [c.group.first_time for c in closed] == pytest.approx([p.start for p in passes])


def test_only_newer_frames_keep_a_camera_alive_against_the_silence():
    """Events that bring no newer capture time (a frame delivered again, a late one) are not the
    camera filming on."""
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0 + 5.0, read("A123BC77", T0 + 5.0)), now=100.0)
    for k in range(1, 10):
        late = T0 + 5.0 - 0.1 * (k % 2)
        grouper.observe(0, seen("cam", late, read("A123BC77", late, offset=k)), now=100.0 + k)
    [closed] = grouper.expire(now=100.0 + RULES.silence_s + 0.1)
    assert closed.reason is ClosedBy.SILENCE and len(closed.group.reads) == 10


@pytest.mark.parametrize("stall_s", [0.0, 5.0, 9.9])
def test_a_worker_stall_shorter_than_the_silence_splits_no_pass(stall_s):
    grouper = Grouper(RULES)
    closed, wall = [], 100.0
    for k in range(20):
        wall += 0.1 + (stall_s if k == 10 else 0.0)
        closed += grouper.expire(wall)
        closed += grouper.observe(
            0, seen("cam", T0 + 0.2 * k, read("A123BC77", T0 + 0.2 * k, offset=k)), wall
        )[0]
    closed += grouper.expire(wall + RULES.silence_s + 0.1)
    assert [len(c.group.reads) for c in closed] == [20]


def test_a_stall_longer_than_the_silence_resumes_the_pass_it_closed():
    """The worker stalled for 15 s mid-pass: the pass closed by silence is reopened by its next read
    and closes again with every read, under the same first read."""
    grouper = Grouper(RULES)
    closes, wall = [], 100.0

    def note(closed: list[Closed]) -> None:
        closes.extend((c.reason, len(c.group.reads), c.group) for c in closed)

    for k in range(20):
        wall += 0.1 + (15.0 if k == 10 else 0.0)
        note(grouper.expire(wall))
        note(grouper.observe(0, seen("cam", T0 + 0.2 * k, read("A123BC77", T0 + 0.2 * k, offset=k)), wall)[0])
    note(grouper.expire(wall + RULES.silence_s + 0.1))
    assert [close[:2] for close in closes] == [(ClosedBy.SILENCE, 10), (ClosedBy.SILENCE, 20)]
    assert closes[0][2] is closes[1][2]


def test_a_pass_closed_by_silence_is_not_resumed_past_the_gap_or_by_another_plate():
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), now=100.0)
    [silenced] = grouper.expire(now=111.0)
    # another plate elsewhere in the frame opens its own pass
    _, [(_, other)] = grouper.observe(
        0, seen("cam", T0 + 0.2, read("K456MH199", T0 + 0.2, (900, 500, 1000, 530), offset=1)), 112.0
    )
    assert other is not silenced.group
    # the camera's clock moves past the gap: too late to resume
    grouper.observe(0, seen("cam", T0 + 1.7), 112.1)
    _, [(_, late)] = grouper.observe(0, seen("cam", T0 + 1.8, read("A123BC77", T0 + 1.8, offset=3)), 112.2)
    assert late is not silenced.group


def test_a_camera_clock_set_back_resumes_nothing():
    grouper = Grouper(RULES)
    grouper.observe(0, seen("cam", T0, read("A123BC77", T0)), now=100.0)
    [silenced] = grouper.expire(now=111.0)
    grouper.observe(0, seen("cam", T0 - 3600.0), 112.0)
    _, [(_, group)] = grouper.observe(0, seen("cam", T0 + 0.2, read("A123BC77", T0 + 0.2, offset=2)), 112.1)
    assert group is not silenced.group
