"""``course.toml``, loaded once into frozen, typed configuration.

Every table and key is declared below; anything else is an error that names the key, the file and
the line, so that a typo such as ``exercise_timout_s`` never silently falls back to a default.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from grader.assignment import Assignment
from grader.catalogue import Misconception, catalogue, load_misconceptions
from grader.errors import ConfigError, UsageError
from grader.layout import Layout

COURSE_FILE = "course.toml"


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass(frozen=True)
class Limits:
    exercise_timeout_s: float
    submission_timeout_s: float
    memory_mb: int
    output_mb: int


SEPARATE_USER = ("auto", "never", "required")


@dataclass(frozen=True)
class Isolation:
    """How far student code is kept from the grader (see grader/sandbox/confine.py)."""

    separate_user: str = "auto"  # auto: when the machine allows it; never; required: refuse to grade without


CASCADES = ("once", "every")


@dataclass(frozen=True)
class Grading:
    """Scoring policy. ``cascades``: "once" (an exercise right but for the student's own faulty helper
    keeps its points and names the helper) or "every" (it loses them too)."""

    cascades: str = "once"


GRADESCOPE_VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")


@dataclass(frozen=True)
class Gradescope:
    """What Gradescope shows students of each exercise's result, and when (its ``visibility``):
    ``visibility`` for every exercise, but those ``exercises`` names otherwise."""

    visibility: str = "visible"
    exercises: tuple[tuple[str, str], ...] = ()  # (exercise, visibility)

    def visibility_of(self, exercise: str) -> str:
        return dict(self.exercises).get(exercise, self.visibility)


@dataclass(frozen=True)
class Course:
    root: Path
    id: str
    title: str
    limits: Limits
    tolerances: tuple[tuple[str, Tolerance], ...]
    assignments: tuple[Assignment, ...]
    isolation: Isolation = Isolation()
    grading: Grading = Grading()
    gradescope: Gradescope = Gradescope()
    misconceptions: tuple[Misconception, ...] = ()  # the course's own, from the file [course] misconceptions names
    misconceptions_file: str = ""  # that file, relative to the course's folder ("": none)
    figures_file: str = ""  # the pictures of wrong outputs, [course] figures (grader/grading/pictures.py; "": none)

    @property
    def catalogue(self) -> dict[str, Misconception]:
        """Every misconception this course's feedback can name: its own, then the grader's generic ones."""
        return catalogue(self.misconceptions)

    def forbidden_calls(self, exercise: str) -> tuple[str, ...]:
        """What the course says ``exercise`` may not call (empty: nothing is forbidden)."""
        return next((dict(a.forbidden).get(exercise, ()) for a in self.assignments if exercise in a.exercises), ())

    def assignment(self, assignment_id: str) -> Assignment:
        for assignment in self.assignments:
            if assignment.id == assignment_id:
                return assignment
        known = ", ".join(a.id for a in self.assignments)
        raise UsageError(f"unknown assignment {assignment_id!r} (the course has: {known})")

    def select(self, assignment_ids) -> tuple[Assignment, ...]:
        """The named assignments, or all of them when none is named."""
        return tuple(self.assignment(a) for a in assignment_ids) if assignment_ids else self.assignments

    def tolerance(self, dtype_name: str) -> Tolerance:
        return dict(self.tolerances).get(dtype_name, dict(self.tolerances)["float32"])

    @property
    def max_score(self) -> float:
        return sum(a.max_score for a in self.assignments)

    @property
    def layout(self) -> Layout:
        """Where this course keeps its assignments, reference, suites and recordings."""
        return Layout(self.root)


# --- the schema -----------------------------------------------------------------------------------
_NUMBER = (int, float)
_TOP_KEYS = {"course", "limits", "tolerances", "assignments"}
_OPTIONAL_TOP_KEYS = {"isolation", "grading", "gradescope"}
_COURSE_KEYS = {"id": str, "title": str, "misconceptions": str, "figures": str}
_LIMIT_KEYS = {"exercise_timeout_s": _NUMBER, "submission_timeout_s": _NUMBER, "memory_mb": int, "output_mb": int}
_TOLERANCE_KEYS = {"rtol": _NUMBER, "atol": _NUMBER}
_ASSIGNMENT_KEYS = {"id": str, "title": str, "module": str, "notebook": str, "points": dict, "forbidden": dict}
_DTYPES = ("float64", "float32", "float16", "bfloat16")


PACKAGED_COURSE = Path(__file__).resolve().parent / "_course"  # in a student distribution installed by pip


def find_course_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) with a course.toml;
    else the course a pip-installed student distribution carries (Colab, any folder)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / COURSE_FILE).is_file():
            return folder
    if (PACKAGED_COURSE / COURSE_FILE).is_file():
        return PACKAGED_COURSE
    raise ConfigError(f"no {COURSE_FILE} found in {here} or any folder above it (use --course DIR)")


def load_course(root: Path) -> Course:
    """Read ``root/course.toml`` into a :class:`Course`; raise ConfigError naming the key and line."""
    path = Path(root) / COURSE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    parser = _Parser(path, text)
    course = parser.course(data)
    parser.files(course)
    return course


class _Parser:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = text.splitlines()

    # errors name the file, the line and the dotted key
    def fail(self, key: str, problem: str, index: int | None = None):
        line = self.line_of(key, index)
        where = f"{self.path}:{line}" if line else str(self.path)
        raise ConfigError(f"{where}: {key}: {problem}")

    def line_of(self, key: str, index: int | None) -> int | None:
        """1-based line where the dotted ``key`` is set (index: which [[assignments]] it belongs to)."""
        *table_parts, leaf = key.split(".")
        table = ".".join(part for part in table_parts if not part.isdigit())
        header, seen, candidate = "", -1, None
        for number, line in enumerate(self.lines, start=1):
            match = re.match(r"\s*(\[\[?)\s*([\w.\-\"]+)\s*\]\]?", line)
            if match:
                header = match.group(2).replace('"', "")
                if match.group(1) == "[[":
                    seen += 1
                if header == key.replace(f".{index}", "") and (index is None or seen == index):
                    candidate = candidate or number  # a table that is itself the key
                continue
            if header == table and (index is None or seen == index):
                if re.match(rf"\s*\"?{re.escape(leaf)}\"?\s*=", line):
                    return number
        return candidate

    def table(self, value: Any, key: str, allowed: Mapping[str, Any], index: int | None = None, *,
              optional: bool | tuple[str, ...] = False) -> dict:
        """``value``, a table of ``allowed`` keys, each of its type; all of them present, but any where
        ``optional`` is True, or those it names."""
        if not isinstance(value, dict):
            self.fail(key, f"must be a table, not {_kind(value)}", index)
        for name, item in value.items():
            dotted = f"{key}.{name}"
            if name not in allowed:
                self.fail(dotted, f"unknown key (expected one of: {', '.join(allowed)})", index)
            expected = allowed[name]
            if not isinstance(item, expected) or isinstance(item, bool):
                self.fail(dotted, f"must be {_describe(expected)}, not {_kind(item)}", index)
        may_miss = optional if isinstance(optional, tuple) else ()
        missing = [name for name in allowed if name not in value and name not in may_miss]
        if missing and optional is not True:
            self.fail(key, f"missing key {missing[0]!r}", index)
        return value

    def course(self, data: dict) -> Course:
        for name in data:
            if name not in _TOP_KEYS | _OPTIONAL_TOP_KEYS:
                self.fail(name, f"unknown table (expected one of: {', '.join(sorted(_TOP_KEYS | _OPTIONAL_TOP_KEYS))})")
        for name in _TOP_KEYS:
            if name not in data:
                self.fail(name, "missing table")
        course = self.table(data["course"], "course", _COURSE_KEYS, optional=("misconceptions", "figures"))
        limits = self.table(data["limits"], "limits", _LIMIT_KEYS)
        tolerances = self.tolerances(data["tolerances"])
        assignments = data["assignments"]
        if not isinstance(assignments, list) or not assignments:
            self.fail("assignments", "must be one or more [[assignments]] tables")
        parsed = tuple(self.assignment(item, i) for i, item in enumerate(assignments))
        ids = [a.id for a in parsed]
        for i, assignment_id in enumerate(ids):
            if ids.index(assignment_id) != i:
                self.fail(f"assignments.{i}.id", f"duplicate assignment id {assignment_id!r}", i)
        return Course(
            root=self.path.parent.resolve(),
            id=course["id"],
            title=course["title"],
            limits=Limits(
                exercise_timeout_s=float(limits["exercise_timeout_s"]),
                submission_timeout_s=float(limits["submission_timeout_s"]),
                memory_mb=limits["memory_mb"],
                output_mb=limits["output_mb"],
            ),
            tolerances=tolerances,
            assignments=parsed,
            isolation=Isolation(separate_user=self.choice(data, "isolation", "separate_user", SEPARATE_USER,
                                                          Isolation.separate_user)),
            grading=Grading(cascades=self.choice(data, "grading", "cascades", CASCADES, Grading.cascades)),
            gradescope=self.gradescope(data, parsed),
            misconceptions=self.misconceptions(course.get("misconceptions")),
            misconceptions_file=course.get("misconceptions", ""),
            figures_file=self.inside(course.get("figures"), "course.figures", ".py"),
        )

    def misconceptions(self, where: str | None) -> tuple[Misconception, ...]:
        """The course's own misconceptions, from the TOML file ``[course] misconceptions`` names (a path
        relative to course.toml's folder, inside it)."""
        if where is None:
            return ()
        return load_misconceptions(self.path.parent / self.inside(where, "course.misconceptions", ".toml"))

    def inside(self, where: str | None, key: str, suffix: str) -> str:
        """``where``, a file of the course's folder named relative to it (a ``suffix`` file, inside the
        folder, present): as it is written; "" for None."""
        if where is None:
            return ""
        import os

        inside = os.path.normpath(where)
        path = self.path.parent / inside
        if os.path.isabs(inside) or inside.split(os.sep)[0] == os.pardir or not path.is_file():
            self.fail(key, f"no file {where!r} in the course's folder")
        if path.suffix != suffix:
            self.fail(key, f"{where!r} should be a {suffix} file")
        return where

    def gradescope(self, data: dict, assignments: tuple[Assignment, ...]) -> Gradescope:
        """``[gradescope]``: ``visibility`` for every exercise, ``exercises = {softmax = "after_due_date"}``
        for some; each a visibility Gradescope knows, each exercise one of the course's."""
        table = self.table(data.get("gradescope", {}), "gradescope", {"visibility": str, "exercises": dict},
                           optional=True)
        visibility = self.choice(data, "gradescope", "visibility", GRADESCOPE_VISIBILITIES, Gradescope.visibility,
                                 table)
        known = {name for a in assignments for name in a.exercises}
        exercises = []
        for name, setting in table.get("exercises", {}).items():
            if name not in known:
                self.fail(f"gradescope.exercises.{name}", "not an exercise of this course")
            if setting not in GRADESCOPE_VISIBILITIES:
                self.fail(f"gradescope.exercises.{name}",
                          f"must be one of {', '.join(map(repr, GRADESCOPE_VISIBILITIES))}, not {setting!r}")
            exercises.append((name, setting))
        return Gradescope(visibility=visibility, exercises=tuple(exercises))

    def choice(self, data: dict, name: str, key: str, choices: tuple[str, ...], default: str,
               table: dict | None = None) -> str:
        """The setting ``key`` of the optional table ``[name]`` (read already: ``table``): one of
        ``choices``, ``default`` when absent."""
        if table is None:
            table = self.table(data.get(name, {}), name, {key: str}, optional=True)
        setting = table.get(key, default)
        if setting not in choices:
            self.fail(f"{name}.{key}", f"must be one of {', '.join(map(repr, choices))}, not {setting!r}")
        return setting

    def tolerances(self, value: Any) -> tuple[tuple[str, Tolerance], ...]:
        table = self.table(value, "tolerances", {dtype: dict for dtype in _DTYPES})
        result = []
        for dtype in _DTYPES:
            entry = self.table(table[dtype], f"tolerances.{dtype}", _TOLERANCE_KEYS)
            result.append((dtype, Tolerance(rtol=float(entry["rtol"]), atol=float(entry["atol"]))))
        return tuple(result)

    def files(self, course: Course) -> None:
        """Where the course has its reference (solutions/), each assignment's module is there as course.toml
        names it, and defines each exercise its points name: a misspelt file or exercise is this file's
        mistake, said here, not a crash or a missing score later. (assignments/ holds students' own code,
        whose missing functions are graded, and a student distribution has no solutions/.)"""
        import ast

        for index, assignment in enumerate(course.assignments):
            folder = course.layout.solution_folder(assignment)
            if not folder.is_dir():
                continue
            module = folder / assignment.module
            if not module.is_file():
                self.fail(f"assignments.{index}.module", f"no {assignment.module} in {folder}", index)
            try:
                tree = ast.parse(module.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                continue  # the reference's own errors show where it is imported
            defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
            for exercise in assignment.exercises:
                if exercise not in defined:
                    self.fail(f"assignments.{index}.points.{exercise}",
                              f"{module.name} defines no function or class {exercise}", index)

    def assignment(self, value: Any, index: int) -> Assignment:
        key = f"assignments.{index}"
        entry = self.table(value, key, _ASSIGNMENT_KEYS, index, optional=("forbidden",))
        points = []
        for exercise, amount in entry["points"].items():
            if not isinstance(amount, _NUMBER) or isinstance(amount, bool) or amount <= 0:
                self.fail(f"{key}.points.{exercise}", f"must be a positive number, not {amount!r}", index)
            points.append((exercise, float(amount)))
        if not points:
            self.fail(f"{key}.points", "lists no exercise", index)
        for name in ("module", "notebook"):
            suffix = ".py" if name == "module" else ".ipynb"
            if not entry[name].endswith(suffix) or "/" in entry[name]:
                self.fail(f"{key}.{name}", f"must be a file name ending in {suffix}", index)
        return Assignment(
            id=entry["id"], title=entry["title"], module=entry["module"], notebook=entry["notebook"], points=tuple(points),
            forbidden=self.forbidden(entry.get("forbidden", {}), key, index, {name for name, _ in points}),
        )

    def forbidden(self, table: dict, key: str, index: int, exercises: set[str]) -> tuple:
        """``[assignments.forbidden]``: exercise -> the library calls it may not make, each a word
        grader.inside.forbidden knows (``"F.softmax"``, ``"nn.MultiheadAttention"``, ...) or a torch
        function's dotted name (``"F.rms_norm"``, ``"torch.cumsum"``)."""
        from grader.inside.forbidden import OPERATIONS_OF, operations_of

        result = []
        for exercise, calls in table.items():
            dotted = f"{key}.forbidden.{exercise}"
            if exercise not in exercises:
                self.fail(dotted, "not an exercise of this assignment's points", index)
            if not isinstance(calls, list) or not all(isinstance(call, str) for call in calls):
                self.fail(dotted, f"must be an array of strings, not {_kind(calls)}", index)
            unknown = [call for call in calls if operations_of(call) is None]
            if unknown:
                self.fail(dotted, f"{unknown[0]!r} is not a call the grader can forbid (a torch function by its "
                          f"dotted name, such as F.rms_norm or torch.cumsum, or one of: {', '.join(OPERATIONS_OF)})",
                          index)
            result.append((exercise, tuple(calls)))
        return tuple(result)


def _kind(value: Any) -> str:
    return {bool: "a boolean", str: "a string", int: "an integer", float: "a number", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


def _describe(expected) -> str:
    if expected == _NUMBER:
        return "a number"
    return _kind(expected())


def parse_seed(value: str | None, option: str = "--seed") -> int | None:
    """A seed as given in text (``--seed``, ``GRADE_SEED``): a whole number, not negative; None if not given."""
    if value is None:
        return None
    try:
        seed = int(value)
    except ValueError:
        raise UsageError(f"{option} must be a whole number, not {value!r}") from None
    if seed < 0:
        raise UsageError(f"{option} must not be negative")
    return seed
