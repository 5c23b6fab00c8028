"""The grader's exceptions. The CLI turns each into one line on stderr and its exit code."""


class GraderError(Exception):
    """A problem the user can fix; ``str(error)`` is the whole message."""

    exit_code = 2

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it, raised by a notebook's ``check()``: one line, as the CLI does, with none
        of the grader's frames (the cell still fails, so nbgrader gives it no points)."""
        return [f"{type(self).__name__}: {self}"]


class ConfigError(GraderError):
    """``course.toml`` is missing, unreadable, or holds an unknown key or a wrong type."""


class SubmissionError(GraderError):
    """The submission path does not exist or is not something we can grade."""


class DeviceError(GraderError):
    """The requested device is not available (``--device cuda`` without a GPU)."""


class UsageError(GraderError):
    """Options that do not fit together, or an assignment or exercise name we do not know."""


class IsolationError(GraderError):
    """``separate_user = "required"`` in course.toml, and this machine cannot run student code as
    another user (not root, or a Python installation other users cannot read)."""


class GraderFailed(GraderError):
    """The grader's own machinery failed on a check (status ``grader-error``): the result holds no valid
    score. Said after the report, as what failed and what to do."""

    def __init__(self, what: str):
        super().__init__(f"the grader itself failed, so this result is not a valid score ({what}); nothing "
                         "was charged to the submission: see docs/security.md, 'Where it runs', fix the machine, "
                         "grade again")


class CourseSecretError(GraderError):
    """The course's secret, which keys ``grade report --anonymise``'s pseudonyms, cannot be read or made:
    nothing is anonymised without it (a pseudonym without a key could be recomputed from a roster)."""

    def __init__(self, path, error: Exception | None):
        if error is None:
            why = ("holds no secret that grade report made (64 hex digits): remove it and the next report makes "
                   "a new one (whose pseudonyms differ)")
        else:
            why = (f"cannot be read or made ({getattr(error, 'strerror', None) or error}): make the course folder "
                   "writable to you, or run grade report --anonymise where it is")
        super().__init__(f"--anonymise keys its pseudonyms with the course's secret, and {path} {why}")


class NothingToDo(GraderError):
    """The input holds nothing to work on (a results folder with no result, an empty class): said in one
    line, exit 2, never an empty page or CSV that reads as a success."""


class RosterError(GraderError):
    """``grade export --roster``'s file cannot map our submission names to the LMS's students: unreadable,
    a column missing, a row the LMS could not match, a name or identifier twice."""
