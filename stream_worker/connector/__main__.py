"""`python -m stream_worker.connector [flags]`: `stream-worker connect` without the root CLI (the
tests run it so); `python -m stream_worker.connector status [flags]`: `stream-worker cameras status`."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "status":
    from stream_worker.connector.commands import status_commands

    status_commands(sys.argv[2:], prog_name="stream-worker cameras status")
else:
    from stream_worker.connector.app import main

    sys.exit(main(sys.argv[1:]))
