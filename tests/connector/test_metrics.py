from stream_worker.connector.metrics import CameraFigures, ConnectorMetrics, totals_of
from stream_worker.connector.reader import CameraStats
from stream_worker.connector.states import CameraState


def test_per_camera_figures_are_labelled_by_camera_id_only():
    streaming = CameraStats(state=CameraState.STREAMING, decoded=100, motion=3, static=7)
    streaming.published, streaming.last_frame_mono = 9, 0.0
    failing = CameraStats(state=CameraState.UNAUTHORIZED, reconnects=4, last_error="401 'rtsp://***:***@h'")
    figures = [
        CameraFigures("gate-1", {**totals_of(streaming, 2), "frames_published": 19}, streaming, True),
        CameraFigures("gate-2", totals_of(failing, 0), failing, False),
    ]
    text = ConnectorMetrics(lambda: figures).render().decode()
    assert 'stream_worker_connector_camera_frames_decoded_total{camera="gate-1"} 100.0' in text
    assert 'stream_worker_connector_camera_frames_published_total{camera="gate-1"} 19.0' in text
    assert 'stream_worker_connector_camera_frames_dropped_total{camera="gate-1"} 2.0' in text
    assert 'stream_worker_connector_camera_reconnects_total{camera="gate-2"} 4.0' in text
    assert 'stream_worker_connector_camera_connected{camera="gate-1"} 1.0' in text
    assert 'stream_worker_connector_camera_connected{camera="gate-2"} 0.0' in text
    assert 'stream_worker_connector_camera_motion_share{camera="gate-1"} 0.3' in text
    assert 'stream_worker_connector_camera_motion_share{camera="gate-2"}' not in text
    assert 'stream_worker_connector_camera_seconds_since_last_frame{camera="gate-1"}' in text
    assert "rtsp" not in text and "***" not in text  # nothing of the URL or the error
