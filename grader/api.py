"""The library's entry points, one per ``grade`` verb. Keyword-only; the CLI only parses options."""
from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from grader.config import Course, find_course_root, load_course, parse_seed  # noqa: F401 (parse_seed: the CLI's)
from grader.errors import DeviceError, GraderFailed, NothingToDo, SubmissionError, UsageError
from grader.results import grader_error_of


def seed_not_used(result, seed: int | None) -> str | None:
    """What the report says when ``--seed`` asked for other cases than were graded: a student
    distribution replays the public cases recorded at one seed (grader/grading/recorded_outputs.py),
    whatever seed is asked; None when no seed was asked, or the one asked was used."""
    if not result.fixed_cases or seed is None or seed == result.seed:
        return None
    return (f"--seed {seed} is not used here: the public checks replay the cases recorded at seed {result.seed}; "
            "the instructor's grading draws its own")


def with_note(text: str, fmt: str, note: str | None) -> str:
    """The rendered report ``text`` with ``note`` said once: a line under the table (and a Markdown
    report), ``notes`` in JSON, the summary's end in Gradescope's; JUnit's XML has no place for it."""
    import json

    if note is None:
        return text
    if fmt in ("table", "markdown"):
        return text + ("" if text.endswith("\n") else "\n") + f"note: {note}\n"
    if fmt in ("json", "gradescope"):
        data = json.loads(text)
        if fmt == "json":
            data["notes"] = [*data.get("notes", ()), note]
        else:
            data["output"] = f"{data.get('output', '')}; {note}"
        return json.dumps(data, indent=2) + "\n"
    return text


def open_course(course_dir: Path | None) -> Course:
    return load_course(course_dir if course_dir else find_course_root())


def default_submission(course: Course, cwd: Path) -> Path:
    """What `grade check` grades when no --submission is given: the course's assignments/; where the course
    has none (a course installed by pip, the packaged one) the working folder, or the assignments/ in it,
    which is what the released ``assignments.zip`` unpacks to (docs/instructors.md)."""
    if course.layout.assignments.is_dir():
        return course.layout.assignments
    unpacked = cwd / course.layout.assignments.name
    return unpacked if unpacked.is_dir() else cwd


# what a GPU driver makes in /dev on Linux: NVIDIA's (containers included), ROCm's (torch.cuda on AMD), WSL's
_GPU_DEVICE_FILES = ("/dev/nvidia*", "/dev/kfd", "/dev/dxg")


def refuse_cuda_early(device: str) -> None:
    """``--device cuda`` on a Linux machine with no GPU driver's device file: refused in one line before torch
    is imported (seconds on a cold machine) or a sandbox started. Wherever such a file exists, or on another
    system, torch decides later (grader.grading.grader.pick_device), as it always did."""
    import glob

    if device == "cuda" and sys.platform.startswith("linux") and not any(map(glob.glob, _GPU_DEVICE_FILES)):
        raise DeviceError("--device cuda: no CUDA device is available on this machine (use --device cpu or auto)")


def refuse_missing_paths(paths) -> None:
    """A path to grade that does not exist: refused in one line before torch is imported, a sandbox
    started or --out made (grader.batch.discover says the same, later)."""
    import os

    for path in paths:
        if not os.path.lexists(path):
            raise SubmissionError(f"no such file or folder: {path}")


def check(*, course: Course, assignment_ids: tuple[str, ...], submission: Path | None, fmt: str,
          output: Path | None, device: str, seed: int | None, colour: bool, debug: bool = False,
          watching: bool = False, figures: Path | None = None) -> int:
    """Grade one submission; write the report; 0 for full marks, 1 otherwise. ``watching``: then again on
    every save, until Ctrl-C (grader/watch.py). ``figures``: a folder for the PNG of each wrong pictured
    exercise (grader/grading/pictures.py), its own output beside the right one."""
    refuse_cuda_early(device)  # before torch is imported or a sandbox started
    from grader.reporting.formats import render
    from grader.grading.grader import Grader
    from grader.submission import resolve_submission

    default = default_submission(course, Path.cwd())
    found = resolve_submission(submission or default, course)
    # the named assignments, else those the submission holds: a folder of 01 and 02 is scored out of their
    # points, never out of the course's (GitHub Classroom showed 37.35/600 for a week of 100)
    chosen = course.select(assignment_ids or tuple(a for a, _ in found.sources))
    if figures is not None:  # before any grading: drawing needs matplotlib, an optional dependency
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise UsageError("--figures draws with matplotlib, which is not installed here: pip install matplotlib "
                             "(or the course's notebooks extra: pip install -e '.[notebooks]')")
    if watching:
        if fmt != "table" or output or figures:
            raise UsageError("--watch shows the table on the screen: leave out --format, --output and --figures")
        from grader.watch import watch

        return watch(course=course, chosen=chosen, submission=Path(submission or default), device=device, seed=seed,
                     colour=colour)
    # None: GRADE_DEBUG decides; twins: several assignments graded by two processes where two processors allow
    grader = Grader(course, device=device, debug=True if debug else None, twins=True)
    try:
        result = grader.grade(found, chosen, seed=seed)
    finally:
        grader.close()
    text = with_note(render(result, fmt, colour=colour and output is None), fmt, seed_not_used(result, seed))
    if output:
        from grader.reporting.result_folder import write_output

        write_output(output, text, ancestors=False)  # (a link or another user's file refused: round 30c)
        print(f"{result.submission}: {result.score:g}/{result.max_score:g} -> {output}", file=sys.stderr)  # what it wrote
    else:
        sys.stdout.write(text)
    if figures is not None:
        from grader.grading.pictures import course_pictures
        from grader.reporting.figures import write_pngs

        drawn = write_pngs(result, figures, pictured=course_pictures(course))
        print(f"{len(drawn)} figure(s) of wrong exercises -> {figures}" if drawn else
              "no figures: no wrong pictured exercise could be drawn (each is right on the lesson's data, with "
              "and without its mask, or it raised there)", file=sys.stderr)
    if result.grader_error:  # no valid score: the grader's own failure, said once, exit 2
        raise GraderFailed(result.grader_error)
    return 0 if result.full_marks else 1


def autograde(*, course: Course, paths: tuple[Path, ...], out: Path, workers: int, shard: str | None,
              resume: bool, device: str, seed: int | None, assignment_ids: tuple[str, ...] = (),
              fresh: bool = False) -> int:
    """Grade many submissions into ``out`` on the named assignments (all when none is named); 0 when
    every one of them has a result."""
    refuse_missing_paths(paths)  # both before anything heavy: an instant one-line error
    refuse_cuda_early(device)
    from grader.batch.autograde import autograde as run

    code = run(course=course, paths=list(paths), out=out, workers=workers, shard=shard, resume=resume,
               device=device, seed=seed, assignments=course.select(assignment_ids), fresh=fresh)
    held = sum(1 for _ in Path(out).glob("*.json"))  # what it wrote, with what earlier runs and shards left there
    print(f"grade: {out} holds {held} result{'' if held == 1 else 's'}, their summary.csv and .grade-manifest",
          file=sys.stderr)
    return code


def export(*, course: Course, result_dirs: tuple[Path, ...], output: Path | None, gradebook: Path | None = None,
           mixed_seeds: bool = False, fmt: str = "csv", roster: Path | None = None,
           missing_as_zero: bool = False) -> int:
    """One CSV of every result in ``result_dirs`` (shards merged; the latest result of a name wins) and of
    nbgrader's gradebook (``gradebook``, or the course's own gradebook.db where there is one). ``fmt``:
    ours (``csv``) or an LMS's gradebook import (grader/platforms: ``canvas``, ``moodle``), whose rows
    are ``roster``'s students (without one, the submissions), an empty grade where one has no result
    (0 where ``missing_as_zero``)."""
    from grader.reporting.export import DEFAULT_RESULTS, export_csv, export_gradebook

    if fmt == "csv" and (roster is not None or missing_as_zero):
        raise UsageError("--roster and --missing-as-zero go with an LMS's --format (canvas, moodle)")
    warnings: list[str] = []
    existing = [d for d in result_dirs if Path(d).is_dir()]
    for missing in (d for d in result_dirs if not Path(d).is_dir()):  # an unmatched shell glob (shard-*/)
        warnings.append(f"{missing}: no such folder, left out")
    if result_dirs and not existing and not gradebook:
        raise UsageError(f"no results folder found: {', '.join(map(str, result_dirs))}")
    if fmt == "csv":
        text = export_csv(course, existing, gradebook, warnings, mixed_seeds=mixed_seeds)
        sources = [row[-1] for row in csv.reader(io.StringIO(text))][1:]
    else:
        text, sources = export_gradebook(course, existing, gradebook, warnings, fmt=fmt, roster=roster,
                                         missing_as_zero=missing_as_zero, mixed_seeds=mixed_seeds)
    for line in warnings:  # result files left out, and scores the gradebook and autograde disagree on
        print(f"grade: warning: {line}", file=sys.stderr)
    folders = existing or ([DEFAULT_RESULTS] if not result_dirs and DEFAULT_RESULTS.is_dir() else [])
    if folders and "autograde" not in sources:  # never the gradebook's rows alone, as if they were the folders'
        raise NothingToDo(f"{', '.join(map(str, folders))}: no result of `grade autograde` there, nothing exported")
    if not sources:
        raise NothingToDo("nothing to export: no results folder (./grades, or those named) and no student in a gradebook")
    if output:
        from grader.reporting.result_folder import write_output

        write_output(output, text)  # where no other user can have put something in its place (round 30c)
        book = len(sources) - sources.count("autograde")
        print(f"grade: {sources.count('autograde')} autograde results" + (f" and {book} gradebook rows" if book else "")
              + f" -> {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def report(*, course: Course | None, result_dirs: tuple[Path, ...], out: Path | None, fmt: str, anonymise: bool,
           gradebook: Path | None = None, mixed_seeds: bool = False) -> int:
    """The class report (grader/reporting/class_report.py) of every verified result in ``result_dirs`` (and of
    nbgrader's gradebook, where given), written to ``out`` or stdout. ``anonymise``: pseudonyms keyed
    by the secret of ``course`` (without one, the course found from the working folder), whose secret
    also verifies the results folders' manifests."""
    from grader.reporting.class_report import course_secret, gather, render, summarise
    from grader.reporting.course_secret import kept_secret
    from grader.reporting.result_folder import write_output

    course = course or open_course(None)
    secret = course_secret(course.root) if anonymise else None  # before any work
    warnings: list[str] = []
    existing = [Path(d) for d in result_dirs if Path(d).is_dir()]
    for missing in (d for d in result_dirs if not Path(d).is_dir()):
        warnings.append(f"{missing}: no such folder, left out")
    if not existing and gradebook is None:
        raise UsageError(f"no results folder found: {', '.join(map(str, result_dirs)) or '(none given)'}")
    results = gather(existing, warnings, secret=kept_secret(course.root), mixed_seeds=mixed_seeds)
    for line in warnings:
        print(f"grade: warning: {line}", file=sys.stderr)
    if existing and not results:  # an empty page of "0 students" would read as a success
        raise NothingToDo(f"{', '.join(map(str, existing))}: no result of `grade autograde` there, no report written")
    if gradebook is not None:
        from grader.reporting.export import gradebook_path, read_gradebook

        found = {r["submission"] for r in results}
        results += [_from_gradebook(course, data) for name, data in
                    read_gradebook(gradebook_path(course, gradebook), course).items() if name not in found]
    if not results:
        raise NothingToDo(f"{gradebook}: no student in the gradebook, no report written")
    summary = summarise(results, secret=secret)
    if out and fmt == "html":
        from grader.reporting.class_page import fits_inline, page, students_page

        if not fits_inline(summary):  # a large class: each student's feedback in a page beside the report
            companion = out.with_name(f"{out.stem}-students.html")
            write_output(companion, students_page(summary), "--out")
            text = page(summary, companion.name)
        else:
            text = page(summary)
    else:
        text = render(summary, fmt)
    if out:
        write_output(out, text, "--out")  # where no other user can have put something in its place (round 30c)
        print(f"grade: the class report of {len(results)} result{'' if len(results) == 1 else 's'} -> {out}",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _from_gradebook(course: Course, data: dict) -> dict:
    """A gradebook entry as a result the report reads: each exercise's points from course.toml."""
    for assignment in data["assignments"]:
        points = dict(course.assignment(assignment["id"]).points)
        for exercise in assignment["exercises"]:
            top = points.get(exercise["name"], 0)
            exercise.update(max_score=top, status="passed" if exercise["score"] >= top else "failed")
    return data


def list_course(*, course: Course) -> str:
    lines = [f"{course.title} ({course.id}): {len(course.assignments)} assignments, {course.max_score:g} points"]
    for assignment in course.assignments:
        lines.append(f"\n{assignment.id}  {assignment.title}  [{assignment.module}, {assignment.notebook}]  "
                     f"{assignment.max_score:g} points")
        for name, points in assignment.points:
            lines.append(f"  {name:<32}{points:>5g}")
    return "\n".join(lines) + "\n"


def gradescope(*, course: Course, assignment_ids: tuple[str, ...], out: Path, seed: int | None = None) -> int:
    """Write Gradescope's autograder package for the named assignments (default all), grading every
    upload on one seed (``seed``, or one drawn now)."""
    import secrets

    from grader.platforms.gradescope import build_package

    if not course.layout.has_reference():
        raise UsageError(f"{course.root} has no solutions/ or suites/hidden/: `grade gradescope` packages the "
                         "instructor's course")
    seed = secrets.randbelow(10**6) if seed is None else seed
    path = build_package(course=course, assignment_ids=assignment_ids, out=out, seed=seed)
    chosen = course.select(assignment_ids)
    print(f"{path}: Gradescope's autograder for {', '.join(a.id for a in chosen)} "
          f"({sum(a.max_score for a in chosen):g} points), every upload graded on seed {seed}; upload it under "
          "Configure Autograder (Ubuntu base image)", file=sys.stderr)
    return 0


def release(*, course: Course, assignment_ids: tuple[str, ...], check_only: bool, out: Path | None = None,
            force: bool = False) -> int:
    """Regenerate (or with ``check_only``, verify) assignments/ from solutions/. 1 when stale or leaking.
    With ``out``: write (or verify) the student distribution of the named assignments (default all) there.
    ``force``: overwrite edits in assignments/, a copy of each kept first (grader/course/release.py)."""
    from grader.course.release import check_release, release as run_release

    if not course.layout.has_reference():
        raise UsageError(f"{course.root} has no solutions/ or suites/hidden/ (a student distribution?): "
                         "`grade release` runs in the instructor's course")
    if force and (check_only or out is not None):
        raise UsageError("--force goes with writing assignments/ (it keeps a copy of the edits it overwrites); "
                         "leave out --check and --out")
    if out is not None and not check_only:
        return release_distribution(course=course, assignment_ids=assignment_ids, out=out)
    if out is not None:
        from grader.course.distribution import check_distribution

        root = Path(out).resolve()
        stale = check_distribution(course, course.select(assignment_ids), root)
        hint = f"run `grade release {' '.join(assignment_ids)} --out {out}` to write it again".replace("  ", " ")
    else:
        root = course.root
        chosen = course.select(assignment_ids)
        stale, edited = check_release(course, chosen) if check_only else ([], [])
        hint = "run `grade release` to regenerate assignments/ from solutions/"
        if edited:  # release would refuse these: say how it goes on
            hint += (f" (it refuses to overwrite edits: {', '.join(str(p.relative_to(root)) for p in edited[:5])}; "
                     "`grade release --force` keeps a copy of them first)")
        if not check_only:  # what it kept and what it wrote, a line each
            _said_kept(run_release(course, chosen, check=False, force=force), course.root)
            target = course.layout.assignments
            written = sum(1 for a in chosen for p in (target / a.id).rglob("*") if p.is_file())
            print(f"grade: wrote {written} files into {_shown(target, root)}, the stubs and release notebooks of "
                  f"{', '.join(a.id for a in chosen)} (from solutions/)", file=sys.stderr)
    for item in stale:
        where = item.path.relative_to(root) if item.path.is_relative_to(root) and item.path != root else item.path
        print(f"{where}: {item.reason}", file=sys.stderr)
    if check_only and stale:
        print(hint, file=sys.stderr)
    elif check_only:  # a verb that checks says what it found, in one line
        what = "the distribution" if out is not None else "assignments/"
        print(f"grade: {what} is up to date with solutions/ and leaks nothing", file=sys.stderr)
    return 1 if stale else 0


def _said_kept(kept: list, root: Path) -> None:
    """The one line that says where ``--force`` kept the edits it overwrote (grader/course/release.py)."""
    if kept:
        print(f"grade: kept a copy of {', '.join(str(k.original.relative_to(root)) for k in kept)} in "
              f"{_shown(kept[0].folder, root)} before overwriting", file=sys.stderr)


def _shown(path: Path, root: Path) -> str:
    return f"{path.relative_to(root)}/" if path.is_relative_to(root) else f"{path}/"


def release_distribution(*, course: Course, assignment_ids: tuple[str, ...], out: Path) -> int:
    """Write the student distribution of the named assignments (default all) into ``out``."""
    from grader.course.distribution import write_distribution

    named = course.select(assignment_ids)
    written = write_distribution(course, named, out)
    asked = {a.id for a in named}
    added = [a for a in written.assignments if a not in asked]
    print(f"wrote the student distribution of {len(written.assignments)} assignment(s) to {written.root} "
          f"({written.checks} public checks, reference outputs recorded)"
          + (f"; with {', '.join(added)}, whose module the others import" if added else ""), file=sys.stderr)
    return 0


def new_exercise(*, course: Course, assignment_id: str, name: str, points: float = 10) -> int:
    """Scaffold the exercise ``name`` of ``assignment_id`` (grader/course/scaffold.py) and say what is left to do."""
    from grader.course.scaffold import new_exercise as scaffold

    done = scaffold(course=course, assignment_id=assignment_id, name=name, points=points)
    print(f"{assignment_id}: {name} added ({done.points:g} points; the assignment now totals {done.total:g}) in:")
    for path in done.files:
        print(f"  {path.relative_to(course.root)}")
    print("Next: write the reference and its shape comments, the checks' cases and mistakes, the lesson's words, "
          "two corpus codings per mistake (tests/corpus/), then `grade release` (docs/authoring.md).")
    return 0


def classroom(*, result: Path) -> int:
    """Print the notices GitHub Classroom reads the points from, for the JSON result in ``result``."""
    import json

    from grader.platforms.classroom import classroom_notices

    try:
        data = json.loads(Path(result).read_text(encoding="utf-8"))
        notices = classroom_notices(data)
    except OSError as error:
        raise UsageError(f"{result}: {error.strerror or error}") from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"{result}: not a JSON result of `grade check` (no score and max_score)") from None
    failure = grader_error_of(data)
    if failure:  # no points notice at all (Classroom would read them as the grade): the step fails, said why
        print(f"::error title=Grader error::the grader itself failed, so there are no points to report ({failure}); "
              "rerun the job once the runner is fixed")
        raise GraderFailed(failure)
    print("\n".join(notices))
    return 0
