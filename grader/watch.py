"""``grade check --watch``: grade once, then again on every save, from a grader kept warm.

The grading process, its pytest session (the suites collected once), its zygote and the reference's
results of the run's one seed stay up between gradings (runner.Grader.grade_each); each save of a
module or notebook of the submission (watched with ``watchfiles``, debounced) re-grades the
assignments whose files changed, and those whose module imports a changed one (04 imports 03's
``causal_attention``). A module that does not parse shows its syntax error at once, with nothing
spawned. On a terminal the screen is redrawn; on a pipe each report follows the last. Every report
ends with what changed since the last one (newly passed, newly failed, points up or down). Ctrl-C
ends it at once, the sandbox with it.
"""
from __future__ import annotations

import re
import secrets
import signal
import sys
from pathlib import Path

from grader.config import Course
from grader.errors import GraderError

SOURCES = (".py", ".ipynb")


def watch(*, course: Course, chosen: tuple, submission: Path, device: str, seed: int | None, colour: bool,
          out=sys.stdout) -> int:
    """Grade ``submission`` on ``chosen`` assignments, then on each save; 0 when stopped with Ctrl-C."""
    from watchfiles import watch as saves

    from grader.grading.grader import Grader
    from grader.submission import resolve_submission

    seed = secrets.randbelow(10**6) if seed is None else seed  # one seed: reports that can be compared
    stopped = []

    def stop(signum, frame):
        stopped.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, stop)
    grader = None
    shown: dict = {}  # (assignment, exercise) -> (status, score) as last shown

    def gradings():
        """The submission, then again at each save that changes what it grades: (submission, assignments)."""
        yield resolve_submission(submission, course), chosen
        folder = submission if submission.is_dir() else submission.parent
        for batch in saves(folder, debounce=200, step=50, raise_interrupt=True):
            changed = {Path(path) for _, path in batch if path.endswith(SOURCES) and not Path(path).name.startswith(".")}
            if submission.is_file():
                changed = {p for p in changed if p.stem == submission.stem}
            if not changed:
                continue
            broken = syntax_errors(changed)
            if broken:
                _show("\n".join(broken) + "\n", colour, out)
                continue
            found = resolve_submission(submission, course)
            again = affected(course, found, chosen, changed)
            if again:
                yield found, again

    def report(job, result):
        if isinstance(result, GraderError):
            raise result
        shown.update(_shown(result, shown, colour, out))

    try:
        # one pytest session, one zygote and the reference's results of this seed, kept between gradings
        grader = Grader(course, device=device, batch=True)
        grader.grade_each(gradings(), chosen, seed=seed, prepare=lambda job: job[0], report=report,
                          assignments_of=lambda job: job[1])
    except KeyboardInterrupt:
        return 0
    except GraderError:
        if stopped:  # Ctrl-C while pytest ran: it reports an interrupted session
            return 0
        raise
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits for the sandbox to go
        if grader is not None:
            grader.close()
        signal.signal(signal.SIGINT, previous)
    return 0


def syntax_errors(paths) -> list[str]:
    """A line for each changed module that does not compile (a notebook's cells are the worker's to read)."""
    found = []
    for path in sorted(paths):
        if path.suffix != ".py" or not path.is_file():
            continue
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
        except SyntaxError as error:
            found.append(f"{path.name}, line {error.lineno}: SyntaxError: {error.msg}\n    {(error.text or '').rstrip()}")
        except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as error:
            found.append(f"{path.name}: cannot be read ({type(error).__name__})")
    return found


def affected(course: Course, found, chosen: tuple, changed: set[Path]) -> tuple:
    """The chosen assignments whose files changed, and those whose module imports one of them."""
    sources = {a: Path(p).resolve() for a, p in found.sources}
    notebooks = {a: Path(p).resolve() for a, p in found.overlays}
    changed = {p.resolve() for p in changed}
    hit = {a for a, p in [*sources.items(), *notebooks.items()] if p in changed or p.parent in changed}
    by_id = {a.id: a for a in course.assignments}
    for assignment in chosen:
        path = sources.get(assignment.id)
        if assignment.id in hit or path is None or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(re.search(rf"^\s*(from|import)\s+{re.escape(by_id[other].module_name)}\b", text, re.M)
               for other in hit if other in by_id):
            hit.add(assignment.id)
    return tuple(a for a in chosen if a.id in hit)


def _shown(result, last: dict, colour: bool, out) -> dict:
    """Show ``result``, and what changed since ``last``; what it showed now, by exercise."""
    from grader.reporting.formats import render

    now = {(a.id, e.name): (e.status, e.score) for a in result.assignments for e in a.exercises}
    said = changes(last, now) if last else []
    text = render(result, "table", colour=colour)
    if said:
        text += "changes since the last grading:\n" + "\n".join(f"  {line}" for line in said) + "\n"
    _show(text + "(watching for saves; Ctrl-C to stop)\n", colour, out)
    return now


def changes(before: dict, after: dict) -> list[str]:
    """What changed between two gradings, an exercise a line: newly passed, newly failed, points up or down."""
    lines = []
    for key, (status, score) in after.items():
        if key not in before:
            continue
        was_status, was_score = before[key]
        name = f"{key[0]}: {key[1]}"
        if status == "passed" and was_status != "passed":
            lines.append(f"✓ {name}: newly passed ({was_score:g} -> {score:g})")
        elif status != "passed" and was_status == "passed":
            lines.append(f"✗ {name}: newly {status} ({was_score:g} -> {score:g})")
        elif score != was_score:
            lines.append(f"{'↑' if score > was_score else '↓'} {name}: {was_score:g} -> {score:g} points")
    return lines


def _show(text: str, colour: bool, out) -> None:
    if colour:
        out.write("\x1b[2J\x1b[H")  # a terminal: the screen redrawn
    out.write(text)
    out.flush()
