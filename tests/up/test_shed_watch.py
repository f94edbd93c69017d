from stream_worker.up.shedding import OFFERED, SHED, ShedWatch, camera_counters

PAGE = """# HELP stream_worker_connector_camera_frames_shed_total Frames left out.
# TYPE stream_worker_connector_camera_frames_shed_total counter
stream_worker_connector_camera_frames_shed_total{camera="dash"} 30.0
stream_worker_connector_camera_frames_shed_total{camera="gate"} 0.0
stream_worker_connector_camera_frames_offered_total{camera="dash"} 100.0
stream_worker_connector_camera_frames_offered_total{camera="gate"} 50.0
stream_worker_connector_camera_frames_decoded_total{camera="dash"} 300.0
"""


def counters(shed: dict[str, float], offered: dict[str, float]) -> dict[str, dict[str, float]]:
    return {SHED: shed, OFFERED: offered}


def test_the_counters_are_read_from_the_metrics_page():
    assert camera_counters(PAGE) == counters({"dash": 30.0, "gate": 0.0}, {"dash": 100.0, "gate": 50.0})


def test_a_camera_that_starts_shedding_is_said_once_a_minute_and_when_it_stops():
    said: list[str] = []
    watch = ShedWatch(said.append)
    watch.compare(counters({"dash": 0, "gate": 0}, {"dash": 0, "gate": 0}), 0.0)
    watch.compare(counters({"dash": 60, "gate": 0}, {"dash": 100, "gate": 50}), 10.0)
    assert said == [
        "warning: camera dash sheds frames: 60 of 100 left out lately, the workers cannot keep up "
        "(see stream-worker cameras status)"
    ]
    watch.compare(counters({"dash": 120, "gate": 0}, {"dash": 200, "gate": 100}), 20.0)
    assert len(said) == 1
    watch.compare(counters({"dash": 180, "gate": 0}, {"dash": 300, "gate": 150}), 70.0)
    assert len(said) == 2
    watch.compare(counters({"dash": 180, "gate": 0}, {"dash": 400, "gate": 200}), 80.0)
    assert said[-1] == "camera dash no longer sheds frames"
    watch.compare(counters({"dash": 180, "gate": 0}, {"dash": 500, "gate": 250}), 90.0)
    assert len(said) == 3


def test_nothing_is_said_before_a_second_look_or_without_shedding():
    said: list[str] = []
    watch = ShedWatch(said.append)
    watch.compare(counters({"dash": 500}, {"dash": 1000}), 0.0)  # shed before up looked: old news
    watch.compare(counters({"dash": 500}, {"dash": 1100}), 10.0)
    assert said == []


def test_a_connector_not_answering_is_left_to_the_supervisor():
    said: list[str] = []
    watch = ShedWatch(said.append, every_s=0)
    watch.look(1)  # nothing listens on port 1
    watch.look(None)
    assert said == []
