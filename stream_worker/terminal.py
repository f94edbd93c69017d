"""Terminal output for long-running commands: status spinners and progress bars for a person at a
terminal, plain lines for logs and pipes.

Interactive output uses `rich` (a dependency of typer, so always installed). When stdout is not a
terminal nothing animates and nothing is redrawn: every step is one line when it starts and one
when it ends, so CI logs and `| tee` stay readable.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console as RichConsole
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn
from rich.text import Text


class Terminal:
    """Where a command's human-readable output goes (stdout; errors to stderr)."""

    def __init__(self, stream: TextIO | None = None, interactive: bool | None = None) -> None:
        stream = stream or sys.stdout
        self.interactive = stream.isatty() if interactive is None else interactive
        self._out = RichConsole(file=stream, force_terminal=self.interactive, highlight=False, soft_wrap=True)
        self._err = RichConsole(stderr=True, highlight=False, soft_wrap=True)
        self._progress: Progress | None = None

    def line(self, text: str, style: str | None = None) -> None:
        """One line of output, above any progress bar that is showing."""
        target = self._progress.console if self._progress is not None else self._out
        target.print(Text(text, style=style or ""), markup=False)

    def error(self, text: str) -> None:
        self._err.print(Text(text, style="bold red" if self._err.is_terminal else ""), markup=False)

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        """A long step: a spinner while it runs (or a plain start line), then its duration."""
        started = time.monotonic()
        try:
            if self.interactive:
                with self._out.status(text + " ..."):
                    yield
            else:
                self.line(f"{text} ...")
                yield
        except BaseException:
            mark = "✗" if self.interactive else "failed:"
            self.line(f"{mark} {text} ({time.monotonic() - started:.1f} s)", style="red")
            raise
        mark = "✓" if self.interactive else "ok"
        self.line(f"{mark} {text} ({time.monotonic() - started:.1f} s)", style="green")

    @contextmanager
    def counters(self, totals: dict[str, int | None]) -> Iterator[Counters]:
        """Progress bars, one per name (total None: unknown yet); invisible when not interactive."""
        if not self.interactive:
            yield Counters(None, {})
            return
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self._out,
            transient=True,
        )
        tasks = {name: progress.add_task(name, total=total) for name, total in totals.items()}
        self._progress = progress
        try:
            with progress:
                yield Counters(progress, tasks)
        finally:
            self._progress = None


class Counters:
    """Handle to the bars of `Terminal.counters`; every call is a no-op in plain output."""

    def __init__(self, progress: Progress | None, tasks: dict[str, TaskID]) -> None:
        self._progress = progress
        self._tasks = tasks

    def update(self, name: str, completed: int, total: int | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._tasks[name], completed=completed, total=total)
