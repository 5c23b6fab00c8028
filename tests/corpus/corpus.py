"""The corpus of student code: mistaken implementations, and correct ones written in other styles.

``mistakes/<misconception id>/<name>.py`` holds one function or class written with that mistake, the
way a student might write it; ``correct/<name>.py`` one written correctly in another style than the
reference. The docstring's first word names the exercise (``softmax: ...``). Each file's
definitions replace the reference's of the same name in a copy of the solutions, and that copy is
graded by the real grader. To grade quickly, entries that cannot affect each other (different
exercises, none using another's) share one grading run.
"""
from __future__ import annotations

import ast
import functools
import shutil
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# exercise -> the exercises of the same assignment whose code it uses (in the reference, or often in a
# student's code): a mistake in one of those would show in it too
USES = {
    "simple_self_attention": {"softmax", "attention_scores"},
    "scaled_dot_product_attention": {"attention_weights"},
    "SelfAttention_v1": {"scaled_dot_product_attention", "attention_weights"},
    "SelfAttention_v2": {"scaled_dot_product_attention", "attention_weights"},
    "CrossAttention": {"scaled_dot_product_attention", "attention_weights"},
    "copy_v2_weights_into_v1": {"SelfAttention_v1", "SelfAttention_v2", "scaled_dot_product_attention",
                                "attention_weights"},
    "apply_causal_mask": {"causal_mask"},
    "renormalize_causal_weights": {"causal_mask"},
    "causal_padding_mask": {"causal_mask", "padding_mask"},
    "CausalAttention": {"causal_mask"},
    "MultiHeadAttentionWrapper": {"CausalAttention", "causal_mask"},
    "MultiHeadAttention": {"split_heads", "merge_heads"},
    "FusedQKVAttention": {"split_qkv", "merge_heads"},
    "CachedMultiHeadAttention": {"sliding_window_mask"},
    "GroupedQueryAttention": {"repeat_kv", "sliding_window_mask"},
    "MultiHeadAttentionWithSWA": {"sliding_window_mask"},
}


@dataclass(frozen=True)
class Entry:
    path: Path
    exercise: str
    misconception: str | None  # None: a correct implementation
    source: str

    @property
    def name(self) -> str:
        folder = self.path.parent.name
        return f"{folder}/{self.path.stem}"


def _entry(path: Path, misconception: str | None) -> Entry:
    source = path.read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    exercise = doc.split(":", 1)[0].strip() if ":" in doc.split("\n", 1)[0] else ""
    if not exercise:  # no docstring naming it (as blind corpora come): the first public definition
        exercise = next((node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                         and not node.name.startswith("_")), "")
    if not exercise:
        raise ValueError(f"{path}: the docstring must start with the exercise, as in 'softmax: ...'")
    return Entry(path, exercise, misconception, source)


def mistakes(root: Path = HERE) -> list[Entry]:
    """Mistakes a catalogue id names (``mistakes/<id>/``; ``mistakes/unnamed/`` is left to ``unnamed``)."""
    return [_entry(p, p.parent.name) for p in sorted((root / "mistakes").glob("*/*.py")) if p.parent.name != "unnamed"]


def unnamed(root: Path = HERE) -> list[Entry]:
    """Mistakes no catalogue id describes: they must lose points and be given no id (``unnamed/``, or
    ``mistakes/unnamed/`` as a blind corpus lays them out)."""
    paths = sorted((root / "unnamed").glob("*.py")) + sorted((root / "mistakes" / "unnamed").glob("*.py"))
    return [_entry(p, None) for p in paths]


def correct(root: Path = HERE) -> list[Entry]:
    return [_entry(p, None) for p in sorted((root / "correct").glob("*.py"))]


def learner(kind: str, root: Path = HERE) -> list[Entry]:
    """A blind learner's files (``learner/attempts/``: every wrong attempt they naturally made, taking the
    course from the lessons and stubs alone; ``learner/correct/``: their final versions). Their own
    account of each mistake, and what the grader said at the time, is ``learner/notes.md``."""
    return [_entry(p, None) for p in sorted((root / "learner" / kind).glob("learner_*.py"))]


def splice(module_text: str, snippet: str) -> str:
    """``module_text`` with each top-level function or class that ``snippet`` defines replaced by the
    snippet's. A snippet's class without ``__init__`` only replaces the methods it defines (so that a
    mistake in ``forward`` needs no copy of the constructor). The snippet's other statements (imports)
    go where its first definition lands."""
    module = ast.parse(module_text)
    lines = module_text.splitlines(keepends=True)
    snippet_lines = snippet.splitlines(keepends=True)
    ours = {n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    edits = []  # (start, end, new text), lines of module_text
    preamble = []
    for node in ast.parse(snippet).body:
        text = "".join(snippet_lines[_start(node) - 1:node.end_lineno])
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            preamble.append(text)
            continue
        target = ours.get(node.name)
        if target is None:
            edits.append((len(lines), len(lines), "\n\n" + text))
        elif isinstance(node, ast.ClassDef) and isinstance(target, ast.ClassDef) and not any(
                isinstance(m, ast.FunctionDef) and m.name == "__init__" for m in node.body):
            methods = {m.name: m for m in target.body if isinstance(m, ast.FunctionDef)}
            for method in node.body:
                if isinstance(method, ast.FunctionDef):
                    body = "".join(snippet_lines[_start(method) - 1:method.end_lineno])
                    old = methods.get(method.name)
                    span = (_start(old) - 1, old.end_lineno) if old else (target.end_lineno, target.end_lineno)
                    edits.append((*span, body if old else "\n" + body))
        else:
            edits.append((_start(target) - 1, target.end_lineno, text))
    edits.sort(key=lambda e: e[0], reverse=True)
    for start, end, text in edits:
        lines[start:end] = [text if text.endswith("\n") else text + "\n"]
    first = min((_start(n) - 1 for n in module.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))), default=0)
    lines[first:first] = preamble
    return "".join(lines)


def _start(node) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def batches(entries: list[Entry], course) -> list[tuple[str, list[Entry]]]:
    """Entries packed into grading runs: per assignment, no two entries on one exercise or on an
    exercise that uses the other's, nor two that one exercise uses."""
    runs: list[tuple[str, list[Entry]]] = []
    for entry in entries:
        assignment = assignment_of(course, entry.exercise)
        touched = _touched(entry, course.assignment(assignment).exercises)
        for run_assignment, run in runs:
            if run_assignment != assignment:
                continue
            theirs = set().union(*(_touched(e, course.assignment(assignment).exercises) for e in run))
            # and no exercise uses two of a run's entries (it would be wrong but for two helpers at once)
            shared = _users(entry.exercise) & set().union(*(_users(e.exercise) for e in run))
            if entry.exercise not in theirs and not (touched & {e.exercise for e in run}) and not shared:
                run.append(entry)
                break
        else:
            runs.append((assignment, [entry]))
    return runs


def _users(exercise: str) -> set[str]:
    return {user for user, used in USES.items() if exercise in used}


def _touched(entry: Entry, exercises) -> set[str]:
    """The entry's exercise, those its reference uses, and those of the assignment its own code names."""
    return {entry.exercise} | USES.get(entry.exercise, set()) | (_names(entry.source) & set(exercises))


@functools.lru_cache(maxsize=None)
def _names(source: str) -> frozenset[str]:
    """The names a source uses (parsed once: batches() asks again for every run it weighs an entry against)."""
    return frozenset(n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name))


def assignment_of(course, exercise: str) -> str:
    for assignment in course.assignments:
        if exercise in assignment.exercises:
            return assignment.id
    raise KeyError(f"no assignment has an exercise {exercise!r}")


def grade_all(entries: list[Entry], course, grader, workdir: Path, seed: int = 2024, suite: str = "hidden", *,
              quick: bool = False) -> dict:
    """Grade every entry (by the ``suite`` given); ``{entry.name: (ExerciseResult of its exercise,
    AssignmentResult)}``. ``quick``: each run grades only the exercises its entries touch (_touched) and
    those that use them (the AssignmentResult holds those alone), and the reference's results are kept for
    the later runs on the same cases (Grader.grade's ``memo``): what a test of the entries' own exercises
    reads, in a fraction of the time."""
    from grader.submission import resolve_submission

    results = {}
    for number, (assignment_id, run) in enumerate(batches(entries, course)):
        target = workdir / f"run{number}" / "assignments"
        for folder in (ROOT / "solutions").iterdir():
            if folder.is_dir():
                (target / folder.name).mkdir(parents=True)
                for source in folder.glob("*.py"):
                    shutil.copy(source, target / folder.name / source.name)
        assignment = course.assignment(assignment_id)
        path = target / assignment_id / assignment.module
        text = path.read_text()
        for entry in run:
            text = splice(text, entry.source)
        path.write_text(text)
        only = None
        if quick:
            own = {entry.exercise for entry in run}
            touched = set().union(*(_touched(entry, assignment.exercises) for entry in run))
            only = tuple(e for e in assignment.exercises if e in touched or USES.get(e, set()) & own)
        result = grader.grade(resolve_submission(target, course), (assignment,), seed=seed, suite=suite,
                              exercises=only, memo=quick)
        by_name = {e.name: e for e in result.assignments[0].exercises}
        for entry in run:
            results[entry.name] = (by_name[entry.exercise], result.assignments[0])
    return results


def diagnosis_rate(entries: list[Entry], results: dict) -> tuple[int, int, list[str]]:
    """(diagnosed with the right id, mistakes in all, the names of those that were not)."""
    missed = [e.name for e in entries if e.misconception not in results[e.name][0].misconceptions]
    return len(entries) - len(missed), len(entries), missed
