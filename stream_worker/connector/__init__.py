"""The camera connector (`stream-worker connect`): reads every camera that has a `source` in its
settings (RTSP, HTTP MJPEG/HLS, a video file) with FFmpeg through PyAV, samples it to its `fps` by
the stream's timestamps, gates it by motion and publishes JPEG frames to the frames topic."""
