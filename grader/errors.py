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
    """The course's secret, which keys ``grade report --anonymise``'s pseudonyms and the manifests of the
    results folders, cannot be read or made: nothing is anonymised or verified without it (a pseudonym
    or a manifest without a key could be recomputed by anyone)."""

    def __init__(self, path, error: Exception | None, why: str | None = None):
        if why is not None:
            pass
        elif error is None:
            why = ("holds no secret that grade made (64 hex digits): remove it and the next run makes "
                   "a new one (whose pseudonyms differ, and which verifies no results folder written before)")
        else:
            why = (f"cannot be read or made ({getattr(error, 'strerror', None) or error}): make the course folder "
                   "writable to you, or run grade where it is")
        super().__init__(f"the course's secret keys --anonymise's pseudonyms and the results folders' manifests, "
                         f"and {path} {why}")


class UntrustedResults(GraderError):
    """A results folder that is not the grader's: ``--out`` owned or writable by another user, or a result
    file whose keyed digest in the folder's manifest does not verify with the course's secret (written
    or changed by someone else): refused in one line, never graded into or exported."""


class NothingToDo(GraderError):
    """The input holds nothing to work on (a results folder with no result, an empty class): said in one
    line, exit 2, never an empty page or CSV that reads as a success."""


class RosterError(GraderError):
    """``grade export --roster``'s file cannot map our submission names to the LMS's students: unreadable,
    a column missing, a row the LMS could not match, a name or identifier twice."""
