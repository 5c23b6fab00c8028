"""The misconception catalogue: the words for every mistake the feedback can name.

The grader knows the generic PyTorch mistakes any course's exercises can make (:data:`GENERIC`); a
course declares its own in a TOML file its ``course.toml`` names (``[course] misconceptions``), one
table per id, and may give a generic id again in its own words (pointing into its lessons). Suites name
a misconception only when a known-wrong computation reproduces the student's output (see
:mod:`grader.grading.diagnose`); this module only holds the words.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigError


@dataclass(frozen=True)
class Misconception:
    id: str
    explanation: str  # what is wrong, said to the student
    hint: str  # what to do, and where the course shows it
    example: str  # one line of code that makes the mistake

    def feedback(self) -> str:
        """The paragraph a report shows under a failed exercise."""
        return f"{self.id}: {self.explanation}\n  Hint: {self.hint}\n  The slip often looks like: {self.example}"


GENERIC = (
    Misconception(
        "input-mutated",
        "Your code modifies its input in place, so the caller's tensor changes.",
        "Compute a new tensor (masked_fill, x - m) instead of an in-place operation (masked_fill_, -=, "
        "x[...] = ...) on an argument.",
        "scores.masked_fill_(mask, float('-inf'))"),
    Misconception(
        "wrong-dtype",
        "Your output has another dtype than expected: for example float32 for a float64 input, or a float "
        "mask where a boolean one is asked for.",
        "Create new tensors with the input's dtype (x.new_zeros(...), torch.zeros_like(x), dtype=x.dtype), "
        "and masks with dtype=torch.bool.",
        "scores = torch.zeros(T, T)  # float32, whatever the input"),
    Misconception(
        "wrong-device",
        "Your output lives on another device than the input (a tensor created without device=).",
        "Create new tensors on the input's device: torch.ones(T, T, device=x.device), or x.new_zeros(...).",
        "mask = torch.ones(T, T, dtype=torch.bool)  # always on the CPU"),
    Misconception(
        "not-vectorised",
        "Your code loops over the entries of a dimension in Python: the number of tensor operations grows "
        "with the input's size.",
        "Work on whole tensors: matrix products, broadcasting and reductions over a dimension.",
        "for i in range(T): out[i] = x[i] @ w"),
    Misconception(
        "view-on-non-contiguous",
        "Your code calls .view() on a tensor that is not contiguous (after a transpose, or for a "
        "non-contiguous input), which PyTorch refuses.",
        "Use .reshape(), or .contiguous().view().",
        "y.transpose(1, 2).view(B, T, -1)"),
    Misconception(
        "forbidden-op",
        "Your code calls a library function this exercise asks you to write yourself.",
        "Write it from torch's basic operations: the exercise's docstring lists what is not allowed.",
        "return torch.nn.functional.softplus(x)  # in an exercise that asks you to write softplus"),
)

_FIELDS = ("explanation", "hint", "example")


def load_misconceptions(path: Path) -> tuple[Misconception, ...]:
    """A course's misconceptions, from the TOML file at ``path``: one table per id, each with exactly
    ``explanation``, ``hint`` and ``example`` (strings). Anything else is a :class:`ConfigError` that
    names the file and the id or key."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the course's misconceptions ({error.strerror or error})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    entries = []
    for mid, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {mid!r} must be a table [{mid}] with {', '.join(_FIELDS)}")
        unknown = [key for key in table if key not in _FIELDS]
        if unknown:
            raise ConfigError(f"{path}: [{mid}]: unknown key {unknown[0]!r} (allowed: {', '.join(_FIELDS)})")
        for key in _FIELDS:
            if not isinstance(table.get(key), str) or not table[key].strip():
                raise ConfigError(f"{path}: [{mid}]: {key} must be a non-empty string")
        entries.append(Misconception(mid, table["explanation"], table["hint"], table["example"]))
    return tuple(entries)


def catalogue(course_entries: tuple[Misconception, ...] = ()) -> dict[str, Misconception]:
    """id -> entry: the course's, in its order, then the generic ones it does not give in its own words."""
    known = {entry.id: entry for entry in course_entries}
    return {**known, **{entry.id: entry for entry in GENERIC if entry.id not in known}}


CATALOGUE: dict[str, Misconception] = catalogue()  # the generic mistakes, for results no course names


def lookup(misconception_id: str, known: dict[str, Misconception] | None = None) -> Misconception:
    """The entry of ``known`` (default: the generic ones); a KeyError names an id a suite uses but the
    catalogue lacks."""
    try:
        return (CATALOGUE if known is None else known)[misconception_id]
    except KeyError:
        raise KeyError(f"{misconception_id!r} is not in the misconception catalogue") from None
