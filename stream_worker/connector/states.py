"""A camera's state as the connector reports it (status topic, `cameras status`, logs), and which
state an error from FFmpeg means.

FFmpeg's errors are classified by what an operator does about them: `unauthorized` (fix the
credentials), `not_video` (fix the URL: it answers, but not with video), `unreachable` (the camera
or the network is down: refused, timed out, no such host, no such file), `missing_credentials` (set
the connector's environment variable), `error` (anything else: read the message). A stream that
stops after its frames with FFmpeg's I/O error (an HTTP server that closed it) has `ended`, as one
that reached its end of file.
"""

from __future__ import annotations

import errno
from enum import StrEnum


class CameraState(StrEnum):
    CONNECTING = "connecting"  # opening the source (the first time or again)
    STREAMING = "streaming"  # frames are coming
    STALLED = "stalled"  # opened, but no frame for the stall timeout: being reopened
    ENDED = "ended"  # a file without loop reached its end, or a live stream ended (tried again)
    UNAUTHORIZED = "unauthorized"  # 401/403: wrong user or password
    NOT_VIDEO = "not_video"  # answers, but not with a video stream
    UNREACHABLE = "unreachable"  # refused, timed out, no such host or file
    MISSING_CREDENTIALS = "missing_credentials"  # a ${NAME} of its URL is not set here
    ERROR = "error"  # anything else (the last error says what)
    STOPPED = "stopped"  # the connector stopped it (shutdown)

    @property
    def failed(self) -> bool:
        return self in FAILED


FAILED = frozenset(
    {
        CameraState.UNAUTHORIZED,
        CameraState.NOT_VIDEO,
        CameraState.UNREACHABLE,
        CameraState.MISSING_CREDENTIALS,
        CameraState.ERROR,
    }
)

_UNREACHABLE_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ETIMEDOUT,
        errno.EIO,  # FFmpeg's answer to a host name that does not resolve
        errno.ENOENT,  # a file source that is not there
        errno.EPIPE,
    }
)


class NotVideo(Exception):
    """The source opened but has no video stream."""


class Stalled(Exception):
    """No frame came for the stall timeout."""


def not_there(error: BaseException) -> bool:
    """The server answered, but has no such stream (HTTP's and RTSP's 404)."""
    import av.error

    return isinstance(error, av.error.HTTPNotFoundError)


def classify(error: BaseException, opening: bool, timed_out: bool = False) -> CameraState:
    """The state an error of opening (`opening`) or reading a source leaves its camera in.
    `timed_out`: the error came when the open or read timeout ran out (FFmpeg then reports an
    exit request or, for RTSP, invalid data)."""
    import av.error  # heavy: only where a stream is read

    if isinstance(error, NotVideo):
        return CameraState.NOT_VIDEO
    if isinstance(error, Stalled):
        return CameraState.STALLED
    if isinstance(error, av.error.HTTPUnauthorizedError | av.error.HTTPForbiddenError):
        return CameraState.UNAUTHORIZED
    if timed_out or isinstance(error, av.error.ExitError | TimeoutError):
        return CameraState.UNREACHABLE if opening else CameraState.STALLED
    if isinstance(error, av.error.InvalidDataError | av.error.DecoderNotFoundError):
        return CameraState.NOT_VIDEO
    if isinstance(error, av.error.HTTPNotFoundError):
        return CameraState.UNREACHABLE
    if not opening and isinstance(error, OSError) and error.errno == errno.EIO:
        return CameraState.ENDED
    if isinstance(error, OSError) and error.errno in _UNREACHABLE_ERRNOS:
        return CameraState.UNREACHABLE
    if isinstance(error, ConnectionError):
        return CameraState.UNREACHABLE
    return CameraState.ERROR
