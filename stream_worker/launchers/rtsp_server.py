"""A local RTSP server that serves video files as endless live H.264 cameras (GStreamer's RTSP server).

Run by the system Python that has the GStreamer bindings (Debian `python3-gi`,
`gir1.2-gst-rtsp-server-1.0`), not by the project's virtual environment: this file imports only
`gi` and the standard library. `stream_worker.launchers.rtsp` starts it for the tests and the demo.

Each mount is a camera: a file decoded in real time by its own producer pipeline, looped by a seek
on its end, handed frame by frame to the RTSP media pipeline through an appsrc that stamps every
frame with the clock on arrival, so the stream's timestamps run on across loops and restarts of
the file the way a camera's do. The media re-encodes with x264 (ultrafast, zero latency, a key
frame every two seconds, SPS/PPS with every key frame so that a client can join at any time), at
the file's own frame rate or at the one asked for, scaled (with borders, never stretched) when a
size is asked for. One media per mount is shared by all its clients and built when the first one
connects, so an idle mount costs nothing.

Usage: python3 rtsp_server.py --config FILE (JSON: host, port, user, password (basic auth on
every mount when given), mounts [{name, path, loop, width, height, fps}]); or --check to verify
that the needed GStreamer parts are installed.
Credentials come only from the config file, never from the command line, and are never printed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

# Element -> the Debian package that ships it, for the error message when one is missing.
REQUIRED_ELEMENTS = {
    "filesrc": "libgstreamer1.0-0",
    "decodebin": "gstreamer1.0-plugins-base",
    "videoconvert": "gstreamer1.0-plugins-base",
    "videoscale": "gstreamer1.0-plugins-base",
    "videorate": "gstreamer1.0-plugins-base",
    "appsrc": "gstreamer1.0-plugins-base",
    "appsink": "gstreamer1.0-plugins-base",
    "avdec_h264": "gstreamer1.0-libav",
    "x264enc": "gstreamer1.0-plugins-ugly",
    "rtph264pay": "gstreamer1.0-plugins-good",
}
READY_LINE = "rtsp server ready"
KEY_FRAME_INTERVAL_S = 2
DEFAULT_QUALITY = 23  # x264 constant quality (like CRF): small enough for plates to stay readable


def load_gstreamer() -> tuple[Any, Any, Any, Any]:
    """Gst, GstRtspServer, GstPbutils, GLib, or SystemExit with what to install."""
    try:
        import gi

        gi.require_version("Gst", "1.0")
        gi.require_version("GstRtspServer", "1.0")
        gi.require_version("GstPbutils", "1.0")
        from gi.repository import GLib, Gst, GstPbutils, GstRtspServer
    except (ImportError, ValueError) as error:
        raise SystemExit(
            f"GStreamer's RTSP server is not usable from {sys.executable}: {error}; install the Debian "
            "packages python3-gi gir1.2-gst-rtsp-server-1.0 (scripts/test-servers.sh does)"
        ) from error
    Gst.init(None)
    missing = sorted(
        {package for name, package in REQUIRED_ELEMENTS.items() if not Gst.ElementFactory.find(name)}
    )
    if missing:
        raise SystemExit(f"GStreamer elements missing; install the Debian packages {' '.join(missing)}")
    return Gst, GstRtspServer, GstPbutils, GLib


def log(message: str) -> None:
    print(message, flush=True)


class Mount:
    """One camera: the file, how to serve it, and what its producer pipeline is doing."""

    def __init__(self, spec: dict[str, Any], gst: Any, pbutils: Any) -> None:
        self.name = str(spec["name"]).strip("/")
        self.path = Path(spec["path"]).resolve()
        self.loop = bool(spec.get("loop", True))
        self.width = spec.get("width")
        self.height = spec.get("height")
        if (self.width is None) != (self.height is None):
            raise SystemExit(f"mount {self.name!r}: give both width and height, or neither")
        native = probe_frame_rate(self.path, gst, pbutils)
        self.fps = Fraction(str(spec["fps"])) if spec.get("fps") else native
        if self.fps is not None and self.fps <= 0:
            raise SystemExit(f"mount {self.name!r}: fps must be positive")

    def launch(self) -> str:
        """The media pipeline: appsrc (frames of the producer) -> x264 -> RTP payloader."""
        raw = ["video/x-raw", "format=I420"]
        if self.width is not None:
            raw += [f"width={int(self.width)}", f"height={int(self.height)}", "pixel-aspect-ratio=1/1"]
        if self.fps is not None:
            raw.append(f"framerate={self.fps.numerator}/{self.fps.denominator}")
        key_int = max(1, round(float(self.fps or 25) * KEY_FRAME_INTERVAL_S))
        rate = "videorate ! " if self.fps is not None else ""
        return (
            "( appsrc name=frames is-live=true format=time do-timestamp=true"
            " max-buffers=3 leaky-type=downstream"
            f" ! videoconvert ! videoscale ! {rate}{','.join(raw)}"
            f" ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={key_int} threads=1"
            f" pass=qual quantizer={DEFAULT_QUALITY}"
            " ! video/x-h264,profile=constrained-baseline ! rtph264pay name=pay0 pt=96 config-interval=-1 )"
        )


def probe_frame_rate(path: Path, gst: Any, pbutils: Any) -> Fraction | None:
    """The file's frame rate (None when variable or unknown); SystemExit when it holds no video."""
    if not path.is_file():
        raise SystemExit(f"no such video file: {path}")
    try:
        info = pbutils.Discoverer.new(10 * gst.SECOND).discover_uri(gst.filename_to_uri(str(path)))
    except Exception as error:
        raise SystemExit(f"{path} cannot be read as a video: {error}") from error
    streams = info.get_video_streams()
    if not streams:
        raise SystemExit(f"{path} holds no video stream")
    numerator, denominator = streams[0].get_framerate_num(), streams[0].get_framerate_denom()
    if numerator <= 0 or denominator <= 0:
        return None
    return Fraction(numerator, denominator)


class Producer:
    """Decodes a mount's file in real time into one media's appsrc, looping it if asked."""

    def __init__(self, mount: Mount, appsrc: Any, gst: Any) -> None:
        self._gst = gst
        self._mount = mount
        self._appsrc = appsrc
        self._pipeline = gst.parse_launch(
            "filesrc name=file ! decodebin ! videoconvert ! video/x-raw,format=I420"
            " ! appsink name=sink sync=true emit-signals=true max-buffers=2 drop=false"
        )
        self._pipeline.get_by_name("file").set_property("location", str(mount.path))
        self._pipeline.get_by_name("sink").connect("new-sample", self._on_sample)
        bus = self._pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message::eos", self._on_eos)
        bus.connect("message::error", self._on_error)
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        self._pipeline.set_state(self._gst.State.PLAYING)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._pipeline.set_state(self._gst.State.NULL)
        self._pipeline.get_bus().remove_signal_watch()

    def _on_sample(self, sink: Any) -> Any:
        sample = sink.emit("pull-sample")
        if sample is None:
            return self._gst.FlowReturn.EOS
        # A copy without timestamps: the appsrc stamps it with the media's clock on arrival, which
        # keeps the stream's time running on across the file's loops.
        buffer = sample.get_buffer().copy()
        buffer.pts = buffer.dts = buffer.duration = self._gst.CLOCK_TIME_NONE
        with self._lock:
            if self._stopped:
                return self._gst.FlowReturn.FLUSHING
            self._appsrc.emit("push-sample", self._gst.Sample.new(buffer, sample.get_caps(), None, None))
        return self._gst.FlowReturn.OK

    def _on_eos(self, _bus: Any, _message: Any) -> None:
        if self._mount.loop:
            flags = self._gst.SeekFlags.FLUSH | self._gst.SeekFlags.KEY_UNIT
            if not self._pipeline.seek_simple(self._gst.Format.TIME, flags, 0):
                log(f"mount {self._mount.name}: could not seek back to the start; stream ends")
                self._appsrc.emit("end-of-stream")
        else:
            self._appsrc.emit("end-of-stream")

    def _on_error(self, _bus: Any, message: Any) -> None:
        error, _debug = message.parse_error()
        log(f"mount {self._mount.name}: decoding {self._mount.path.name} failed: {error.message}")
        self._appsrc.emit("end-of-stream")


def build_server(config: dict[str, Any], gst: Any, rtsp: Any, pbutils: Any) -> tuple[Any, list[Mount]]:
    mounts = [Mount(spec, gst, pbutils) for spec in config["mounts"]]
    if not mounts:
        raise SystemExit("no mounts to serve")
    names = [mount.name for mount in mounts]
    if len(set(names)) != len(names):
        raise SystemExit(f"mount names must be unique: {names}")
    server = rtsp.RTSPServer()
    server.set_address(str(config.get("host", "127.0.0.1")))
    server.set_service(str(int(config["port"])))
    protected = configure_auth(server, config.get("user"), config.get("password"), rtsp)
    points = server.get_mount_points()
    for mount in mounts:
        points.add_factory(f"/{mount.name}", make_factory(mount, protected, gst, rtsp))
    return server, mounts


def configure_auth(server: Any, user: str | None, password: str | None, rtsp: Any) -> bool:
    """Basic auth on every mount when a user is given: no credentials or wrong ones get 401.

    Server-wide on purpose: GStreamer answers a client without credentials on a mount its role may
    not see with 404, not 401, so per-mount credentials would hide the challenge; a test that wants
    open and protected cameras starts two servers."""
    if user is None:
        return False
    auth = rtsp.RTSPAuth()
    token = rtsp.RTSPToken()
    token.set_string("media.factory.role", "camera-user")
    auth.add_basic(rtsp.RTSPAuth.make_basic(user, password or ""), token)
    server.set_auth(auth)
    return True


def make_factory(mount: Mount, protected: bool, gst: Any, rtsp: Any) -> Any:
    factory = rtsp.RTSPMediaFactory()
    factory.set_launch(mount.launch())
    factory.set_shared(True)
    if protected:
        permissions = rtsp.RTSPPermissions()
        permissions.add_permission_for_role("camera-user", "media.factory.access", True)
        permissions.add_permission_for_role("camera-user", "media.factory.construct", True)
        factory.set_permissions(permissions)

    def configure(_factory: Any, media: Any) -> None:
        appsrc = media.get_element().get_by_name("frames")
        producer = Producer(mount, appsrc, gst)
        media.connect("unprepared", lambda _media: producer.stop())
        producer.start()
        log(f"mount {mount.name}: client connected, streaming {mount.path.name}")

    factory.connect("media-configure", configure)
    return factory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, help="JSON file: host, port, mounts")
    parser.add_argument("--check", action="store_true", help="only check that GStreamer is usable")
    args = parser.parse_args(argv)
    gst, rtsp, pbutils, glib = load_gstreamer()
    if args.check:
        log("gstreamer rtsp server usable")
        return 0
    if args.config is None:
        parser.error("--config is required")
    config = json.loads(args.config.read_text())
    server, mounts = build_server(config, gst, rtsp, pbutils)
    loop = glib.MainLoop()
    if server.attach(None) == 0:
        raise SystemExit(f"cannot listen on {config.get('host', '127.0.0.1')}:{config['port']} (in use?)")
    for signum in (signal.SIGTERM, signal.SIGINT):
        glib.unix_signal_add(glib.PRIORITY_DEFAULT, signum, loop.quit)
    described = ", ".join(
        f"{m.name} ({m.path.name}{', ' + str(m.width) + 'x' + str(m.height) if m.width else ''}"
        f"{', ' + str(m.fps) + ' fps' if m.fps else ''})"
        for m in mounts
    )
    auth = ", basic auth" if config.get("user") is not None else ""
    log(f"{READY_LINE} on port {server.get_bound_port()}{auth}: {described}")
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
