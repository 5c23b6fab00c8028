"""Progress of a batch: a rich bar with ETA on a terminal, one plain line per submission elsewhere
(CI logs), always on stderr so that stdout stays clean."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, done: int = 0):
        self.total, self.done = total, done
        self.started = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self.bar = Bar(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           TextColumn("{task.description}"), console=Console(file=sys.stderr), transient=False)
            self.task = self.bar.add_task("", total=total, completed=done)
            self.bar.start()

    def advance(self, name: str, score: float, max_score: float, *, grader_error: str | None = None,
                error: str | None = None) -> None:
        """One more submission done: its score, or (``grader_error``) that the grader failed on it, or
        (``error``) why it could not be graded at all (rejected at intake)."""
        self.done += 1
        said = f"grader error, no score ({grader_error})" if grader_error else \
            f"{score:g}/{max_score:g}, not graded: {error}" if error else f"{score:g}/{max_score:g}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"{name}: {said}")
        else:
            elapsed = time.monotonic() - self.started
            print(f"[{self.done}/{self.total}] {name}: {said} ({elapsed:.1f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
