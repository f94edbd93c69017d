"""`stream-worker report`'s work: one report of the history store over a time range, written as
CSV, JSON Lines or a PNG chart to a file or stdout.

Exit codes: 0 written, 2 invalid option, 3 database unreachable or not migrated.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from stream_worker.store.report_files import FORMATS as FILE_FORMATS
from stream_worker.store.report_files import render
from stream_worker.store.reports import ReportRange, report
from stream_worker.store.search_output import INVALID, UNREACHABLE, open_store

WRITTEN = 0
FORMATS = (*FILE_FORMATS, "png")


def run(
    database_url: str,
    name: str,
    span: ReportRange,
    file_format: str,
    output: Path | None,
    echo_err: Callable[[str], None],
) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    if file_format not in FORMATS:
        echo_err(f"error: --format must be one of {', '.join(FORMATS)}")
        return INVALID
    if file_format == "png" and output is None:
        echo_err("error: --format png needs --output FILE")
        return INVALID
    database = open_store(database_url, echo_err)
    if database is None:
        return UNREACHABLE
    try:
        with database.connect() as connection:
            answer = report(connection, name, span)
    except ValueError as error:
        echo_err(f"error: {error}")
        return INVALID
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines() or [type(error).__name__]
        echo_err(f"error: cannot read {database.safe_url}: {reason[0]}")
        return UNREACHABLE
    finally:
        database.dispose()
    if file_format == "png":
        try:
            from stream_worker.store.report_png import draw

            draw(answer, output)
        except ImportError:
            echo_err("error: --format png needs matplotlib (pip install 'stream-worker[dev]')")
            return INVALID
    elif output is None:
        sys.stdout.buffer.write(render(answer, file_format))
        sys.stdout.flush()
    else:
        output.write_bytes(render(answer, file_format))
    if output is not None:
        echo_err(f"{answer.title}: {len(answer.rows)} rows written to {output}")
    return WRITTEN
