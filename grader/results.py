"""What a grading run produces, and its JSON form (the course spec's schema 1)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

STATUSES = ("passed", "failed", "error", "timeout", "not_implemented", "forbidden", "crashed", "grader-error")
# when an exercise's checks end differently, the one the student must fix first names its status; a
# check the grader itself could not run (``grader-error``) leaves the exercise without a valid score
GRADER_ERROR = "grader-error"
WORST_FIRST = (GRADER_ERROR, "forbidden", "timeout", "crashed", "error", "failed", "not_implemented", "passed")


def grader_error_of(data: dict) -> str | None:
    """The grader's own failure in a JSON result (one line), or None: such a result holds no valid score,
    and no export, Gradescope results or Classroom points may read it as one."""
    if data.get("grader_error"):
        return str(data["grader_error"])
    for assignment in data.get("assignments", ()):
        for exercise in assignment.get("exercises", ()):
            if exercise.get("status") == GRADER_ERROR:
                return f"{assignment.get('id')}: {exercise.get('name')}: the grader could not grade it"
    return None


def collision_of(data: dict, *, names: bool = True) -> str:
    """What a JSON result says of a name that another submission's cleaned to too (its ``name_collision``,
    grader/batch/discover.py), in one line, or "": every raw name, and that neither took the name they
    shared. Without ``names`` (an anonymised report) the line names nobody."""
    found = data.get("name_collision")
    if not isinstance(found, dict):
        return ""
    if not names:
        return "its name cleaned to the same as another submission's: each graded under a name of its own"
    others = found.get("others") if isinstance(found.get("others"), list) else []
    raws = ", ".join(repr(str(raw)) for raw in [found.get("raw"), *others])
    return (f"name collided: {raws} all clean to {str(found.get('name'))!r}; graded apart, neither takes it "
            f"(this is {str(found.get('raw'))!r})")


MESSAGE_LIMIT = 2_000  # characters of one check's message
FEEDBACK_LIMIT = 8_000  # characters of one exercise's feedback
FIGURE_LIMIT = 16  # rows and columns of an exercise's figure at most (grader/grading/pictures.py)


_UNPRINTABLE = frozenset(map(chr, [*range(9), *range(11, 32), 127, 0xFFFE, 0xFFFF]))
# characters that reorder or hide the text around them (bidirectional overrides and isolates, zero-width
# and invisible format characters): shown as <U+202E>, so that no name or message reads as another
INVISIBLE = frozenset(map(chr, [0x061C, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
                                *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF]))


def plain_text(text: str, limit: int) -> str:
    """Text any report can hold (UTF-8, XML 1.0, a terminal): no lone surrogates (as ``\\udcxx``), no
    control characters but newlines and tabs, no U+FFFE/U+FFFF, no character that reorders or hides text
    (a right-to-left override is shown as ``<U+202E>``), at most ``limit`` characters with the
    cut said. Messages carry student text (exception messages, output), so this is done once, where a
    check's outcome is made, and every renderer and result file can trust it."""
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join("\ufffd" if c in _UNPRINTABLE else f"<U+{ord(c):04X}>" if c in INVISIBLE else c for c in text)
    if len(text) > limit:
        text = text[:limit] + f" ... ({len(text) - limit} characters cut)"
    return text


@dataclass
class CheckOutcome:
    name: str  # the check, as the student may see it (no hidden code)
    weight: float
    status: str
    message: str = ""
    misconceptions: tuple[str, ...] = ()
    duration_s: float = 0.0  # the check's own run, the grader's comparisons included
    ruled_out: tuple[str, ...] = ()  # misconceptions this failing case contradicts: computed, and not its output
    unexplained: str | None = None  # the message without its explanation, for when another case contradicts it
    forgiven_by: str = ""  # passed as right given the student's own faulty helper: that helper exercise
    forgiven_call: str = ""  # and that helper's call on this case, where its arguments are plain
    forgiven_raise: bool = False  # ... and the helper raised there: nothing of this exercise's own was seen
    forgiven_for: str = ""  # ... and the helper's mistake it shows, by its id, where the blame named one
    forgiven_also: tuple[str, ...] = ()  # ... and that helper's own helpers each of which, alone put right, made it right
    forgiven_either: tuple[str, ...] = ()  # ... and the exercise's other helpers each of which, alone put right, did
    verified: bool = False  # an output of the student's was compared and found right in this check
    wrong_calls: tuple[str, ...] = ()  # calls of plain arguments this check graded and found wrong
    kept: float = 0.0  # the share of its weight a failed check keeps: FORWARD_SHARE where only the backward failed
    # (on a case kept right given a helper: what it would keep, failed; grader.grading.charges moves the rest)
    rules_read: tuple[str, ...] = ()  # rules this check read on its own calls (Grade.reads_rule)
    rules_broken: tuple[tuple, ...] = ()  # (rule, how[, helpers]) broken on its comparing calls (Grade.keeps_rules)
    rules_unverified: tuple[tuple, ...] = ()  # (rule, why[, (helper,)]): its reading call was wrong[, by that helper alone]

    def __post_init__(self):
        self.name = plain_text(self.name, 200)
        self.message = plain_text(self.message, MESSAGE_LIMIT)
        self.unexplained = self.message if self.unexplained is None else plain_text(self.unexplained, MESSAGE_LIMIT)


def _mostly(failing: list, named: set) -> str:
    """What most failing checks' outputs show, where one mistake explains them but another failing check
    contradicts it (so no id is named, and the first check's explanation is left out): said as what those checks
    show, naming no id (the porters' round of session 22: an attention_weights taking its softmax over the queries,
    whose right handling of fully hidden rows no mistake model had, got only numbers on every check); "" where no
    one explanation holds for most of them."""
    from collections import Counter

    groups = Counter(tuple(sorted(c.misconceptions)) for c in failing
                     if c.misconceptions and not set(c.misconceptions) & named)
    if not groups:
        return ""
    ids, count = groups.most_common(1)[0]
    if count * 2 <= len(failing) or count == len(failing):
        return ""
    example = next((c for c in failing if tuple(sorted(c.misconceptions)) == ids and c.unexplained
                    and c.message.startswith(c.unexplained + "; ")), None)
    if example is None:
        return ""
    other = next(c for c in failing if tuple(sorted(c.misconceptions)) != ids)
    return (f". On {count} of the {len(failing)} failing checks {example.message[len(example.unexplained) + 2:]}; "
            f"{other.name} is off in another way too, so no mistake is named")


@dataclass
class ExerciseResult:
    name: str
    max_score: float
    checks: list[CheckOutcome] = field(default_factory=list)
    source: str = ""  # the file it was graded from, as the student knows it
    source_note: str = ""  # where the module and the notebook beside it both had it (or one as a stub)
    figure: dict | None = None  # wrong on the lesson's data: theirs beside the right output (grader/grading/pictures.py)
    # the course's catalogue (Course.catalogue), whose words explain the ids named; None: the generic ones
    known: dict | None = field(default=None, repr=False, compare=False)
    # the cases of other exercises kept right given this one's mistake, which no check of its own is known to have
    # charged: (that exercise, its cases, their points there); this exercise scores at most its points less theirs
    # (grader.grading.charges)
    charges: list[tuple[str, int, float]] = field(default_factory=list)
    # a notebook cell's: what the charges its cases kept lay on helpers graded beside it take from those helpers,
    # whose own cells never grade their users: (helper, points), taken from this exercise's cell instead
    # (grader.platforms.notebook_grading.the_cells_exercise)
    carried: list[tuple[str, float]] = field(default_factory=list)

    @property
    def score(self) -> float:
        """The points of the checks passed, out of the checks that ran: a check the grader could not run
        takes and gives nothing (the exercise's status says that its score is not valid)."""
        graded = [c for c in self.checks if c.status != GRADER_ERROR]
        total = sum(c.weight for c in graded)
        if not total:
            return 0.0
        earned = sum(c.weight * (1.0 if c.status == "passed" else c.kept) for c in graded)
        own = self.max_score * earned / total
        charged = min(own, self.max_score - sum(points for _, _, points in self.charges))
        return round(max(0.0, charged - sum(points for _, points in self.carried)), 2)

    @property
    def own_score(self) -> float:
        """:attr:`score` from its own checks alone, before what :attr:`charges` and :attr:`carried` take."""
        return dataclasses.replace(self, charges=[], carried=[]).score

    @property
    def status(self) -> str:
        if not self.checks:
            return "not_implemented"
        kinds = {c.status for c in self.checks} - {"passed"}
        if not kinds:
            return "passed"
        return next(k for k in WORST_FIRST if k in kinds)

    @property
    def misconceptions(self) -> list[str]:
        """The ids named, less any that another failing case of this exercise contradicts: an id is
        named only when it explains the output on every failing case where it was tried."""
        contradicted = {m for check in self.checks if check.status != "passed" for m in check.ruled_out}
        seen: list[str] = []
        for check in self.checks:
            seen += [m for m in check.misconceptions if m not in seen and m not in contradicted]
        return seen

    @property
    def feedback(self) -> str:
        return self.feedback_after({})

    @property
    def duration_s(self) -> float:
        return sum(c.duration_s for c in self.checks)

    @property
    def notes(self) -> list[str]:
        """What passed checks said: an exercise right but for the student's own faulty helper keeps
        its points under the default cascade policy, and says which helper to fix."""
        first: dict[str, str] = {}  # one note per helper named ("right, given your X; ..."): the first
        for check in self.checks:
            if check.status == "passed" and check.message:
                first.setdefault(check.message.split(";", 1)[0], check.message)
        return list(first.values())

    def feedback_after(self, said: dict[str, str]) -> str:
        """The feedback, as a report shows it after the exercises that ``said`` what they said
        (``{message or misconception id: exercise}``, updated here): a message an earlier exercise
        showed (one import error behind every exercise) and a misconception already explained are
        pointed to, not repeated."""
        status = self.status
        noted = [self.source_note] if self.source_note else []
        carried = [self.carried_note] if self.carried else []
        if status == "passed":
            return plain_text("\n".join([f"all {len(self.checks)} checks passed", *self.notes, *carried, *noted]),
                              FEEDBACK_LIMIT)
        if status == "not_implemented":
            first = next(c for c in self.checks if c.status == "not_implemented")
            return "\n".join([first.message or "not attempted yet", *noted])
        failing = [c for c in self.checks if c.status != "passed"]
        first = next(c for c in failing if c.status == status)
        more = f" ({len(failing) - 1} more check(s) failed)" if len(failing) > 1 else ""
        named = set(self.misconceptions)
        message = first.message if not first.misconceptions or set(first.misconceptions) & named else first.unexplained
        if "\n" in message and message in said:
            message = f"the same as {said[message]}, above"
        said.setdefault(first.message, self.name)
        explained = ""
        for entry in self.explanations:
            explained += f"\n{entry.id}: explained under {said[entry.id]}, above" if entry.id in said \
                else f"\n{entry.feedback()}"
            said.setdefault(entry.id, self.name)
        noted = f"\n{self.source_note}" if self.source_note else ""
        carried = f"\n{self.carried_note}" if self.carried else ""
        partly = _mostly(failing, named)
        return plain_text(f"{first.name}: {message}{more}{partly}{self.charged_note}{carried}{noted}{explained}",
                          FEEDBACK_LIMIT)

    @property
    def carried_note(self) -> str:
        return "; ".join(f"this cell carries {points:.2f} point(s) of your {helper}'s mistake, which cases of this "
                         f"exercise kept right given it show (graded whole, `grade check` takes them from {helper})"
                         for helper, points in self.carried)

    @property
    def charged_note(self) -> str:
        """What :attr:`charges` says, or ""."""
        if not self.charges:
            return ""
        shown = ", ".join(f"{through}'s {cases} case(s) ({points:.2f} point(s))" for through, cases, points in self.charges)
        kept = sum(points for _, _, points in self.charges)
        return (f"\nkept right given your {self.name}: {shown}; its mistake costs here at least what they kept, so "
                f"this exercise scores at most {max(0.0, self.max_score - kept):.2f} (no check of its own found "
                f"those calls wrong)")

    @property
    def explanations(self) -> list:
        """The catalogue's entries (explanation, hint, example) for the misconceptions named."""
        from grader.catalogue import CATALOGUE

        known = CATALOGUE if self.known is None else self.known
        return [known[m] for m in self.misconceptions if m in known]

    def to_json(self) -> dict:
        return {"name": self.name, "score": self.score, "max_score": self.max_score, "status": self.status,
                "misconceptions": self.misconceptions, "feedback": self.feedback,
                "hints": [{"misconception": e.id, "explanation": e.explanation, "hint": e.hint, "example": e.example}
                          for e in self.explanations],
                "duration_s": round(self.duration_s, 3), "source": self.source,
                "checks": [{"name": c.name, "status": c.status, "weight": c.weight, **({"kept": c.kept} if c.kept and c.status != "passed" else {})}
                           for c in self.checks],
                **({"charged": [{"through": t, "cases": n, "points": round(p, 4)} for t, n, p in self.charges]}
                   if self.charges else {}),
                **({"carried": [{"helper": h, "points": round(p, 4)} for h, p in self.carried]} if self.carried else {}),
                **({"figure": self.figure} if self.figure and self.status != "passed" else {})}


@dataclass
class AssignmentResult:
    id: str
    title: str
    exercises: list[ExerciseResult]

    @property
    def score(self) -> float:
        return round(sum(e.score for e in self.exercises), 2)

    @property
    def max_score(self) -> float:
        return sum(e.max_score for e in self.exercises)

    def feedback_said_once(self) -> dict[str, str]:
        """Each exercise's feedback as a report for people shows it, top to bottom: what an earlier
        exercise already said (a traceback, a misconception's explanation) is pointed to, once said.
        JSON keeps every exercise's feedback whole, for tools that read one exercise alone."""
        said: dict[str, str] = {}
        return {e.name: e.feedback_after(said) for e in self.exercises
                if e.status not in ("passed", "not_implemented") or e.source_note or (e.status == "passed" and e.notes)}

    @property
    def sources(self) -> list[str]:
        """The files its exercises were graded from, most used first."""
        from collections import Counter

        return [name for name, _ in Counter(e.source for e in self.exercises if e.source).most_common()]

    def to_json(self) -> dict:
        """Each exercise's JSON, with ``shown``: what ``grade check``'s table showed under it (its
        feedback as said once, passed checks' "right, given your ..." notes included), "" for nothing;
        grader.reporting.formats.table_of redraws the table from it. Results written before it lack it."""
        shown = self.feedback_said_once()
        return {"id": self.id, "score": self.score, "max_score": self.max_score,
                "exercises": [{**e.to_json(), "shown": shown.get(e.name, "")} for e in self.exercises]}


@dataclass
class SubmissionResult:
    submission: str
    seed: int
    device: str
    duration_s: float
    assignments: list[AssignmentResult]
    isolation: str = "same-user"  # "separate-user": student code ran as a user of its own (grader.sandbox.confine)
    started: str = ""  # when grading began, ISO 8601 in UTC
    fixed_cases: bool = False  # the public cases replayed (a student distribution): no --seed draws others

    @property
    def rerun(self) -> str:
        """How to grade these inputs again, as the report says it."""
        if self.fixed_cases:
            return "the public cases are fixed: every run of `grade check` grades these same inputs"
        return f"rerun with `grade check --seed {self.seed}`"

    def __post_init__(self):
        self.submission = plain_text(self.submission, 300)  # a path's name: any bytes but / and NUL

    @property
    def score(self) -> float:
        return round(sum(a.score for a in self.assignments), 2)

    @property
    def max_score(self) -> float:
        return sum(a.max_score for a in self.assignments)

    @property
    def full_marks(self) -> bool:
        return all(e.status == "passed" for a in self.assignments for e in a.exercises)

    @property
    def grader_error(self) -> str | None:
        """What the grader itself failed at, in one line (the first such check's message), or None."""
        for assignment in self.assignments:
            for exercise in assignment.exercises:
                for check in exercise.checks:
                    if check.status == GRADER_ERROR:
                        what = (check.message.splitlines() or [""])[0].split("; this is not your fault")[0]
                        return f"{assignment.id}: {exercise.name}: {what}"
        return None

    def to_json(self) -> dict:
        data = {"schema": 1, "submission": self.submission, "seed": self.seed, "device": self.device,
                "score": self.score, "max_score": self.max_score, "duration_s": round(self.duration_s, 3),
                "started": self.started, "isolation": self.isolation,
                "assignments": [a.to_json() for a in self.assignments]}
        if self.grader_error:
            data["grader_error"] = self.grader_error
        return data
