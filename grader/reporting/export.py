"""``grade export``: one CSV of all grades: the result folders of every autograde shard, merged, and
nbgrader's gradebook (``gradebook.db`` at the course root, or another one named).

A row per submission and source: ``autograde`` rows come from result files (where shards overlap,
the most recent result of a name wins), ``nbgrader`` rows from the gradebook, one per student, with
the assignments they handed in (score after nbgrader's late penalty, as ``nbgrader export`` gives it)
and each exercise's graded cell (``test_<exercise>``).
"""
from __future__ import annotations

from pathlib import Path

from grader.config import Course
from grader.errors import UsageError
from grader.reporting.course_secret import kept_secret
from grader.reporting.formats import csv_text
from grader.reporting.result_folder import collect, graded_assignments, not_graded
from grader.results import GRADER_ERROR, WORST_FIRST, collision_of

DEFAULT_RESULTS = Path("grades")
# the export's note columns, each where some row has one: what to know of a row that its scores cannot say
NOTES = {"name_collision": collision_of, "not_graded": not_graded}


def gradebook_path(course: Course, gradebook: Path | None | bool) -> Path | None:
    """The gradebook named, which must exist, or the course's own where there is one; none where
    ``gradebook`` is False (``--no-gradebook``: the autograde results alone)."""
    if gradebook is False:
        return None
    if gradebook is not None:
        if not Path(gradebook).is_file():
            raise UsageError(f"no such gradebook: {gradebook}")
        return Path(gradebook)
    default = course.layout.gradebook
    return default if default.is_file() else None


def read_gradebook(path: Path, course: Course) -> dict[str, dict]:
    """The gradebook's grades by student, shaped like autograde results (the fields export reads)."""
    try:
        from nbgrader.api import Gradebook
    except ImportError:
        raise UsageError(f"{path} is nbgrader's gradebook: reading it needs nbgrader "
                         "(pip install 'attention-course[notebooks]')") from None
    known = {a.id: a for a in course.assignments}
    students: dict[str, list[dict]] = {}
    with Gradebook(f"sqlite:///{Path(path).resolve()}", course.id) as book:
        for assignment in book.assignments:
            if assignment.name not in known:
                continue
            for submission in assignment.submissions:
                cells = {g.name.removeprefix("test_"): g.score for n in submission.notebooks for g in n.grades}
                students.setdefault(submission.student.id, []).append({
                    "id": assignment.name,
                    "score": round(max(0.0, submission.score - submission.late_submission_penalty), 2),
                    "max_score": submission.max_score,
                    "exercises": [{"name": name, "score": cells[name]}
                                  for name in known[assignment.name].exercises if name in cells]})
    return {student: {"submission": student, "score": round(sum(a["score"] for a in graded), 2),
                      "max_score": sum(a["max_score"] for a in graded), "assignments": graded}
            for student, graded in sorted(students.items())}


def disagreements(autograded: dict[str, dict], gradebook: dict[str, dict]) -> list[str]:
    """Exercises that a student's autograde result and nbgrader's gradebook score differently. nbgrader
    runs student code in the kernel that scores it, so a tampered check cell shows up here."""
    found = []
    for student, book in gradebook.items():
        isolated = {(a["id"], e["name"]): e["score"] for a in autograded.get(student, {}).get("assignments", ())
                    for e in a["exercises"]}
        for assignment in book["assignments"]:
            for exercise in assignment["exercises"]:
                theirs = isolated.get((assignment["id"], exercise["name"]))
                if theirs is not None and abs(theirs - exercise["score"]) > 0.01:
                    found.append(f"{student} {assignment['id']}:{exercise['name']}: nbgrader {exercise['score']:g}, "
                                 f"autograde {theirs:g}")
    return found


def export_csv(course: Course, result_dirs: list[Path], gradebook: Path | None = None,
               warnings: list[str] | None = None, *, mixed_seeds: bool = False) -> str:
    """A row per submission and source: total, each assignment, each exercise (then, where some name
    collided, ``name_collision``; where some submission could not be read, ``not_graded``), then the
    seed, the status and the source.
    Without result folders: ./grades, unless there is a gradebook and no ./grades. Exercises that the
    two sources score differently for one student are appended to ``warnings``, and so is each
    submission that could not be read (a corrupt archive, an empty folder, no module: status ``error``):
    its score cells are empty, never a 0, and its ``not_graded`` cell says why."""
    sources = _sources(course, result_dirs, gradebook, warnings, mixed_seeds)
    graded = graded_assignments(course, [data for _, grades in sources for data in grades.values()])
    assignments = [a.id for a in graded]  # those some result holds: a week's export holds that week's
    exercises = [f"{a.id}:{name}" for a in graded for name in a.exercises]
    results = [data for _, grades in sources for data in grades.values()]
    noted = [column for column, said in NOTES.items() if any(map(said, results))]
    rows = [["submission", "score", "max_score", *assignments, *exercises, *noted, "seed", "status", "source"]]
    rows += [_row(name, data, source, assignments, exercises, noted) for source, grades in sources
             for name, data in grades.items()]
    _say_unread([(name, data) for _, grades in sources for name, data in grades.items()], warnings)
    return csv_text(rows)  # names as data: none is a formula in a spreadsheet


def _sources(course: Course, result_dirs: list[Path], gradebook: Path | None, warnings: list[str] | None,
             mixed_seeds: bool) -> list[tuple[str, dict[str, dict]]]:
    """The grades by source (``autograde``, then ``nbgrader`` where there is a gradebook), by submission."""
    book = gradebook_path(course, gradebook)
    if not result_dirs and (book is None or DEFAULT_RESULTS.is_dir()):
        result_dirs = [DEFAULT_RESULTS]
    # the results folders' manifests verify with the course's secret
    sources = [("autograde", collect(result_dirs, warnings, secret=kept_secret(course.root), mixed_seeds=mixed_seeds))]
    if book is not None:
        sources.append(("nbgrader", read_gradebook(book, course)))
        if warnings is not None:
            warnings += [f"{line} (a notebook's check cell tampered with, or other random inputs)"
                         for line in disagreements(sources[0][1], sources[1][1])]
    return sources


def export_gradebook(course: Course, result_dirs: list[Path], gradebook: Path | None, warnings: list[str], *,
                     fmt: str, roster: Path | None = None, missing_as_zero: bool = False,
                     mixed_seeds: bool = False) -> tuple[str, list[str]]:
    """An LMS's gradebook CSV (``fmt``, a name of grader/platforms' GRADEBOOKS) of the same grades, a
    row per student: where autograde and the gradebook both hold a name, autograde's result. With the
    source of each submission's grades (as the CSV's column ``source`` says them). A submission the
    grader failed on or could not read gets an empty grade (Grades: ""), never a 0; the writer says
    why in ``warnings`` for each student of its file (Grades.notes)."""
    from grader.platforms import GRADEBOOKS
    from grader.platforms.roster import Grades

    sources = _sources(course, result_dirs, gradebook, warnings, mixed_seeds)
    chosen: dict[str, tuple[str, dict]] = {}
    for source, grades in reversed(sources):  # autograde's last, so that it wins
        chosen.update((name, (source, data)) for name, data in grades.items())
    warnings += [f"{name}: {line}: map it by hand (the roster's submission column)" for name, (_, data)
                 in sorted(chosen.items()) if (line := collision_of(data))]  # the LMS's file has no column for it
    graded = graded_assignments(course, [data for _, data in chosen.values()])
    table = Grades(columns=tuple((a.title, a.max_score) for a in graded),
                   scores={name: _scores(data, [a.id for a in graded]) for name, (_, data) in sorted(chosen.items())},
                   notes={name: why for name, (_, data) in sorted(chosen.items()) if (why := not_graded(data))})
    text = GRADEBOOKS[fmt](table, roster, warnings, missing_as_zero=missing_as_zero)
    return text, [source for source, _ in chosen.values()]


def _scores(data: dict, assignments: list[str]) -> tuple:
    """A submission's score per assignment: None where it holds no result, "" where it holds no score
    (the grader failed, or could not read the submission)."""
    failed = _scoreless(data)
    held = {a["id"]: a["score"] for a in data["assignments"]}
    return tuple("" if a in failed else held.get(a) for a in assignments)


def _scoreless(data: dict) -> set[str]:
    """The assignments of a result that hold no valid score: every one of a submission that could not be
    read (result_folder.not_graded), and those with an exercise the grader failed on."""
    if not_graded(data):
        return {a["id"] for a in data["assignments"]}
    return {a["id"] for a in data["assignments"] if any(e.get("status") == GRADER_ERROR for e in a["exercises"])}


def _row(name: str, data: dict, source: str, assignments: list[str], exercises: list[str], noted: list[str]) -> list:
    """One submission's row of the export. A result the grader failed on, or of a submission it could
    not read, holds no valid score: its cells stay empty, never a 0. ``noted``: the export's columns
    ``name_collision`` (some submission's name cleaned to another's; grader/batch/discover.py) and
    ``not_graded`` (why a submission could not be read), where it has them."""
    failed, unread = _scoreless(data), bool(not_graded(data))
    by_assignment = {a["id"]: a for a in data["assignments"]}
    scores = {f"{a['id']}:{e['name']}": "" if unread or e.get("status") == GRADER_ERROR else e["score"]
              for a in data["assignments"] for e in a["exercises"]}
    return [name, "" if failed else data["score"], data["max_score"],
            *[by_assignment[a]["score"] if a in by_assignment and a not in failed else "" for a in assignments],
            *[scores.get(e, "") for e in exercises], *[NOTES[column](data) for column in noted],
            data.get("seed", ""), worst_status(data), source]


def _say_unread(results: list[tuple[str, dict]], warnings: list[str] | None) -> None:
    """A line in ``warnings`` for each submission that could not be read: its grade is empty, and why."""
    if warnings is not None:
        warnings += [f"{name}: not graded, an empty grade: {why}" for name, data in results if (why := not_graded(data))]


def worst_status(data: dict) -> str:
    """The worst status of a result's exercises (``passed`` when all passed): a timeout, a stub and a
    wrong answer that all read 0.0 are told apart. Empty for the gradebook, which keeps no status."""
    statuses = {e.get("status") for a in data.get("assignments", ()) for e in a.get("exercises", ())}
    return next((s for s in WORST_FIRST if s in statuses), "")
