"""``grade release --out DIR``: the student distribution, the folder students clone.

It holds ``assignments/`` (the stubs and release notebooks as ``grade release`` writes them, made from
solutions/ afresh), the ``grader`` package, ``course.toml``, the public suites with the reference outputs they need, recorded once here as
plain tensors (``suites/public/reference.pt``), a student README, CI templates (GitHub Classroom,
GitLab) from ``templates/distribution/`` and a ``pyproject.toml``. Never ``solutions/`` nor the
hidden suites: everything is built in a scratch folder and scanned for leaks before DIR is touched.
``grade release --check --out DIR`` builds the same and says what in DIR differs.

There, with neither ``solutions/`` nor ``suites/hidden/``, ``grade check`` replays the recording (see
:func:`grader.grading.recorded_outputs.public_recording`): offline, with the verdicts the reference gives on those cases.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.config import Assignment, Course, load_course
from grader.errors import GraderError
from grader.layout import Layout
from grader.course.kept_recordings import kept
from grader.course.leaks import Stale, leaks_in
from grader.course.release import with_imports

PUBLIC_SEED = 2024  # the public cases' inputs are drawn from it, at release and in every replay
TEMPLATES = Path("templates", "distribution")
_JUNK = ("__pycache__", "*.pyc", ".ipynb_checkpoints")
_BUILT = ("build", "dist", ".ipynb_checkpoints")  # what `pip install .` (and *.egg-info) and Jupyter write there


class DistributionError(GraderError):
    """The distribution cannot be written (where it would go, a failing public suite, a leak)."""


@dataclass(frozen=True)
class Written:
    root: Path
    assignments: tuple[str, ...]
    checks: int  # public checks, all recorded and replayable


def write_distribution(course: Course, assignments: tuple[Assignment, ...], out: Path) -> Written:
    """Write the student distribution of ``assignments`` into ``out`` (new, empty, or a previous
    distribution, whose files are all replaced except ``.git``), with every assignment whose module
    theirs import (grader.course.release.with_imports): a student's 04 runs on their own 03."""
    out = _target(course, Path(out))
    assignments = with_imports(course, assignments)  # 04 imports 03's CausalAttention: both go
    with _prepared(course, assignments) as (build, checks):
        _install(build, out)
    return Written(out, tuple(a.id for a in assignments), checks)


def check_distribution(course: Course, assignments: tuple[Assignment, ...], out: Path) -> list[Stale]:
    """What in the distribution ``out`` differs from what `grade release --out` would write there now
    (the recorded reference outputs compared as tensors), and anything in it that leaks."""
    out = Path(out).resolve()
    if not is_distribution(out):
        return [Stale(out, "is not a student distribution (no course.toml and suites/public/reference.pt)")]
    stale = []
    with _prepared(course, with_imports(course, assignments)) as (build, _):
        expected = {p.relative_to(build) for p in build.rglob("*") if p.is_file()}
        for name in sorted(expected):
            there = out / name
            if not there.is_file():
                stale.append(Stale(there, "missing"))
            elif not _same_file(build / name, there):
                stale.append(Stale(there, "differs from what `grade release --out` writes"))
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        name = path.relative_to(out)
        if name not in expected and not {".git", "__pycache__", *_BUILT} & set(name.parts) \
                and not name.parts[0].endswith(".egg-info"):
            stale.append(Stale(path, "is not written by `grade release --out`"))
    return stale + leaks_in(course, out)


@contextlib.contextmanager
def _prepared(course: Course, assignments: tuple[Assignment, ...]):
    """The distribution built in a scratch folder, its public suites recorded, scanned for leaks:
    ``(folder, number of public checks)``."""
    _need_reference(course)
    with tempfile.TemporaryDirectory(prefix="grade-distribution-") as scratch:
        build = Path(scratch) / "distribution"
        _build(course, assignments, build)
        # a recording made from this very course before is read back (grader.course.kept_recordings)
        checks = kept(course, assignments, PUBLIC_SEED, Layout(build).recording,
                      lambda path: _recorded_into(course, assignments, path)[1])
        # the course inside the package too, so that `pip install` of the distribution (from a git URL,
        # in Colab) grades in any folder: course.toml and the public suites with their recording
        shutil.copytree(Layout(build).suites, Layout(build / "grader" / "_course").suites)
        shutil.copy(build / "course.toml", build / "grader" / "_course" / "course.toml")
        _copy_course_files(course, build, build / "grader" / "_course")
        found = leaks_in(course, build)
        if found:
            raise DistributionError(f"refusing to write a distribution that leaks: "
                                    f"{found[0].path.relative_to(build)} {found[0].reason}"
                                    + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))
        load_course(build)  # the course.toml students get must load
        yield build, checks


def _same_file(ours: Path, theirs: Path) -> bool:
    if ours.suffix != ".pt":
        return ours.read_bytes() == theirs.read_bytes()
    import torch

    from grader.grading.recorded_outputs import Recording

    try:
        old = Recording.load(theirs)
    except Exception:  # noqa: BLE001 - anything unreadable is simply not the recording we would write
        return False
    new = Recording.load(ours)
    return old.seed == new.seed and old.events.keys() == new.events.keys() and all(
        _same_value(old.events[k], new.events[k], torch) for k in new.events)


def _same_value(a, b, torch) -> bool:
    if isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and (
            torch.equal(a, b) or (b.is_floating_point() and torch.allclose(a, b, 0.0, 0.0, equal_nan=True)))
    if isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and len(a) == len(b) and all(_same_value(x, y, torch) for x, y in zip(a, b))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k], torch) for k in b)
    return a == b


# --- where it goes --------------------------------------------------------------------------------------
def is_distribution(folder: Path) -> bool:
    layout = Layout(folder)
    return (folder / "course.toml").is_file() and layout.recording.is_file() and not layout.suite_folder("hidden").exists()


def _target(course: Course, out: Path) -> Path:
    _ours(Path(os.path.abspath(out)))  # (before a link is followed)
    out, root = out.resolve(), course.root.resolve()
    if out == root or root in out.parents:
        raise DistributionError(f"--out {out}: the distribution must be written outside the course folder {root}")
    if out in root.parents:
        raise DistributionError(f"--out {out}: the course folder {root} is inside it; choose a folder of its own")
    if out.exists():
        if not out.is_dir():
            raise DistributionError(f"--out {out} is a file, not a folder")
        other = [p.name for p in out.iterdir() if p.name != ".git"]
        if other and not is_distribution(out):
            raise DistributionError(f"--out {out} holds files ({', '.join(sorted(other)[:3])}, ...) and is not a "
                                    "student distribution written before: choose a new or empty folder")
    return out


def _ours(out: Path) -> None:
    """Refuse an ``--out`` another user could change once it is written (red team round 30c: root released into an
    ordinary user's empty folder, who then put a grader of their own in the distribution): it, where it exists, must
    belong to you or root and be writable by no one else, and no folder above it may be swappable by another user
    (grader.sandbox.ownership.check_ancestors)."""
    import stat

    from grader.errors import UntrustedResults
    from grader.sandbox.ownership import check_ancestors

    nearest = out  # the folder it goes into: the nearest one that exists (what is missing is made, as yours)
    while not os.path.lexists(nearest) and nearest != nearest.parent:
        nearest = nearest.parent
    try:
        check_ancestors(nearest / "_" if nearest != out else out)
        seen = os.lstat(out)
    except FileNotFoundError:
        return
    except UntrustedResults as error:
        raise DistributionError(str(error)) from None
    if stat.S_ISLNK(seen.st_mode) or seen.st_uid not in (os.geteuid(), 0) or seen.st_mode & 0o022:
        raise DistributionError(f"--out {out} is a link, or belongs to another user, or others can write it: they "
                                "could change the distribution once it is written; choose a folder of your own")


def _install(build: Path, out: Path) -> None:
    """Replace what ``out`` holds (all but its .git) with the contents of ``build``. A folder made here is writable
    by its owner alone, whatever the umask (a later release refuses one others may write: :func:`_ours`)."""
    if not out.exists():
        out.mkdir(parents=True)
        out.chmod(0o755)
    for entry in out.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for entry in build.iterdir():
        shutil.move(str(entry), str(out / entry.name))


# --- what goes in ---------------------------------------------------------------------------------------
def record_public_suites(course: Course, assignments: tuple[Assignment, ...]):
    """The reference's outputs on the public suites of ``assignments``, checked to replay in full.

    Returns the recording and the number of public checks. Every check must pass on the reference
    solutions, and again when replayed from the saved recording (a check that uses the reference
    other than through the ``grade`` fixture's comparisons could not run in the distribution)."""
    with tempfile.TemporaryDirectory(prefix="grade-recording-") as scratch:
        return _recorded_into(course, assignments, Path(scratch) / "reference.pt")


def _recorded_into(course: Course, assignments: tuple[Assignment, ...], path: Path):
    """:func:`record_public_suites`, the recording saved to ``path`` and replayed from there."""
    from grader.grading.recorded_outputs import Recording
    from grader.grading.grader import Grader
    from grader.submission import resolve_submission

    _need_reference(course)
    recording = Recording(PUBLIC_SEED)
    solutions = resolve_submission(course.layout.solutions, course)
    grader = Grader(course, device="cpu")
    try:
        live = grader.grade(solutions, assignments, seed=PUBLIC_SEED, recording=recording, suite="public")
        _expect_full_marks(live, "the reference solutions fail the public suite")
        recording.save(path)
        replayed = grader.grade(solutions, assignments, recording=Recording.load(path), suite="public")
    finally:
        grader.close()
    _expect_full_marks(replayed, "the public suite does not replay from its recording")
    counts = [_check_counts(result) for result in (live, replayed)]
    if counts[0] != counts[1]:
        lost = sorted(name for name, n in counts[0].items() if counts[1].get(name, 0) < n)
        raise DistributionError(f"public checks of {', '.join(lost)} cannot be replayed without the reference "
                                "(they use grade.ref directly): compare through grade.same or grade.module instead")
    return recording, sum(counts[0].values())


def _need_reference(course: Course) -> None:
    if not course.layout.has_reference():
        raise DistributionError("this course has no solutions/ or suites/hidden/: a student distribution is "
                                "written from the instructor's course")


def _check_counts(result) -> dict[str, int]:
    return {f"{a.id}.{e.name}": len(e.checks) for a in result.assignments for e in a.exercises}


def _expect_full_marks(result, problem: str) -> None:
    failing = [f"{a.id}.{e.name} ({e.status}: {e.feedback.splitlines()[0] if e.feedback else ''})"
               for a in result.assignments for e in a.exercises if e.status != "passed"]
    if failing:
        more = f" and {len(failing) - 1} more" if len(failing) > 1 else ""
        raise DistributionError(f"{problem}: {failing[0]}{more}")


def _build(course: Course, assignments: tuple[Assignment, ...], build: Path) -> None:
    from grader.course.release import render

    ignore = shutil.ignore_patterns(*_JUNK)
    # what release writes, made from solutions/ here: never the live assignments/, where a course in use
    # holds edits (a stub someone filled in to try grade check would have shipped as every student's stub)
    Layout(build).assignments.mkdir(parents=True, exist_ok=True)
    render(course, assignments, Layout(build).assignments)
    shutil.copytree(Path(__file__).resolve().parents[1], build / "grader", ignore=ignore)
    ours, theirs = course.layout, Layout(build)
    theirs.suite_folder("public").mkdir(parents=True)
    shutil.copy(ours.suite_folder("public") / "__init__.py", theirs.suite_folder("public") / "__init__.py")
    for shared in ours.shared_with_the_suites():  # pytest.ini, the helpers the public suites import (any name)
        if shared.is_dir():
            shutil.copytree(shared, theirs.suites / shared.name, ignore=ignore)
        else:
            shutil.copy(shared, theirs.suites / shared.name)
    for assignment in assignments:
        shutil.copy(ours.suite(assignment, "public"), theirs.suite(assignment, "public"))
    (build / "course.toml").write_text(course_toml(course, assignments), encoding="utf-8")
    _copy_course_files(course, course.root, build)
    _without_answers(course, build)
    (build / "pyproject.toml").write_text(pyproject(course), encoding="utf-8")

    templates = course.root / TEMPLATES
    if not templates.is_dir():
        raise DistributionError(f"no templates for the distribution: expected {templates}")
    for source in sorted(templates.rglob("*")):
        if source.is_file():
            target = build / source.relative_to(templates)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = source.read_text(encoding="utf-8")
            target.write_text(_fill(text, course, assignments) if source.name == "README.md" else text,
                              encoding="utf-8")


def _without_answers(course: Course, build: Path) -> None:
    """The suites' code as students get it: every ``@model`` function's body cut out (its calls are answered from
    the recording), and refused if anything in it still computes an answer (grader.course.answers)."""
    from grader.course.answers import given_answers, shipped_computations, strip

    suites = Layout(build).suites
    figures = build / course.figures_file if course.figures_file else None
    shipped = [suites, *([figures] if figures and suites not in figures.parents else [])]
    strip(shipped)
    found = shipped_computations(shipped) + given_answers(Layout(build).assignments)
    if found:
        path, line, operation = found[0]
        raise DistributionError(f"refusing to write a distribution that computes an answer outside the lesson's @model "
                                f"functions (grader.grading.models; a helper the stubs or notebooks give): "
                                f"{path.relative_to(build)}:{line} ({operation})"
                                + (f", and {len(found) - 1} more" if len(found) > 1 else ""))


def _copy_course_files(course: Course, source: Path, target: Path) -> None:
    """The files course.toml names (the feedback's words, the figures) from ``source`` into ``target``
    where the suites' copy has not brought them already."""
    for name in (course.misconceptions_file, course.figures_file):
        if name and not (target / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / name, target / name)


def course_toml(course: Course, assignments: tuple[Assignment, ...]) -> str:
    """The course's course.toml, with only the [[assignments]] tables of ``assignments``."""
    text = (course.root / "course.toml").read_text(encoding="utf-8")
    keep = {a.id for a in assignments}
    if keep == {a.id for a in course.assignments}:
        return text
    head, *tables = re.split(r"^\[\[assignments\]\][ \t]*\r?\n", text, flags=re.MULTILINE)
    kept = [t for t in tables if (m := re.search(r'^\s*id\s*=\s*"([^"]*)"', t, re.MULTILINE)) and m.group(1) in keep]
    return (head + "".join("[[assignments]]\n" + t for t in kept)).rstrip("\n") + "\n"


def pyproject(course: Course) -> str:
    """A pyproject.toml that installs the ``grade`` command (this grader package) with the
    dependencies of the course's own pyproject.toml; the notebooks extra without nbgrader."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    path = course.root / "pyproject.toml"
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise DistributionError(f"cannot read the dependencies from {path}: {error}") from None
    notebooks = [d for d in project.get("optional-dependencies", {}).get("notebooks", []) if "nbgrader" not in d]

    def strings(values):
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    return "\n".join([
        "# Written by `grade release --out`: installs the `grade` command for this course.",
        "[build-system]", 'requires = ["setuptools>=61"]', 'build-backend = "setuptools.build_meta"', "",
        "[project]", f"name = {json.dumps(course.id)}", f"version = {json.dumps(project.get('version', '0'))}",
        f"description = {json.dumps(course.title + ': assignments and the grade command')}",
        'readme = "README.md"', f"requires-python = {json.dumps(project.get('requires-python', '>=3.10'))}",
        f"dependencies = {strings(project.get('dependencies', []))}", "",
        "[project.optional-dependencies]", f"notebooks = {strings(notebooks)}", "",
        "[project.scripts]", 'grade = "grader.cli:main"', "",
        "[tool.setuptools.packages.find]", 'include = ["grader*"]', "",
        "[tool.setuptools.package-data]", 'grader = ["_course/*.toml", "_course/suites/*", "_course/suites/*/*"]',
        "",
    ])


def _fill(text: str, course: Course, assignments: tuple[Assignment, ...]) -> str:
    rows = "\n".join(f"| `{a.id}` | {a.title} | `{a.module}`, `{a.notebook}` | {a.max_score:g} |" for a in assignments)
    values = {"title": course.title, "assignments": rows, "count": str(len(assignments)),
              "points": f"{sum(a.max_score for a in assignments):g}", "first": assignments[0].id}
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text
