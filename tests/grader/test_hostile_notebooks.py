"""A notebook is the student's file, whatever it holds (issue 33): one that is not a Jupyter notebook, or
huge, beside the module or alone, gives the submission a score with the reason, never `grader-error`,
and costs the grading process a bounded amount of memory and time (docs/course-spec.md, "Trust and
isolation"; grader/inside/notebook_source.py, LIMITS)."""
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.errors import GraderError, SubmissionError
from grader.course.stubs import stub_source
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "01_attention_basics"
SOLUTION = ROOT / "solutions" / ASSIGNMENT / "attention_basics.py"
SOLUTION_NOTEBOOK = ROOT / "solutions" / ASSIGNMENT / "attention_basics.ipynb"


def _code(source):
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}


def _notebook(*cells) -> bytes:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


MALFORMED = {  # the bytes of a file named attention_basics.ipynb, and what the report says of it
    "a list": (b"[]", "is not a Jupyter notebook"),
    "cells of numbers": (b'{"cells": [1]}', "cells must be a list of objects"),
    "a source of numbers": (json.dumps({"cells": [{"cell_type": "code", "source": [1, 2]}]}).encode(),
                            "the source of cell 1 must be text"),
    "cells an object": (b'{"cells": {"a": 1}}', "cells must be a list of objects"),
    "a source that is a number": (json.dumps({"cells": [{"cell_type": "code", "source": 3}]}).encode(),
                                  "the source of cell 1 must be text"),
    "a cell without cell_type": (json.dumps({"cells": [{"source": "import torch"}]}).encode(), "has no cell_type"),
    "nested lists": (b"[" * 50 + b"]" * 50, "is not a Jupyter notebook"),
    "null": (b"null", "is not a Jupyter notebook"),
    "a huge integer": (b'{"cells": [], "nbformat": ' + b"9" * 5000 + b"}", "not JSON"),
    "invalid UTF-8": (b'{"cells": [{"cell_type": "code", "source": "\xff\xfe"}]}', "not UTF-8"),
    "metadata a list": (json.dumps({"cells": [{"cell_type": "code", "source": "x = 1", "metadata": []}]}).encode(),
                        "metadata of cell 1 must be an object"),
    "nbgrader metadata a string": (json.dumps({"cells": [{"cell_type": "code", "source": "x = 1",
                                                          "metadata": {"nbgrader": "yes"}}]}).encode(),
                                   "nbgrader metadata of cell 1"),
    "JSON nested past the decoder": (b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    "not JSON": (b"{not json", "not JSON"),
    "a cell that does not parse": (_notebook(_code("def softmax(x:\n")), "[cell 1] has a syntax error"),
    "a lone surrogate": (b'{"cells": [{"cell_type": "code", "source": "x = \'\\ud800\'"}]}', "not Unicode text"),
    "a folder": (None, "was not read (not a regular file"),
    "a link to /dev/zero": ("/dev/zero", "was not read (not a regular file"),
    "a link to a notebook outside the folder": ("outside", "was not read (not a regular file"),
}


def _malformed_folders(tmp_path: Path, assignment, *, module: bool) -> list[Path]:
    """A submission folder per MALFORMED case (``case0``, ``case1``...), its notebook with the stub
    module beside it or alone."""
    outside = tmp_path / "outside.ipynb"
    outside.write_bytes(_notebook(_code("import torch")))
    folders = []
    for index, (what, _) in enumerate(MALFORMED.values()):
        folder = tmp_path / f"case{index}" / ASSIGNMENT
        folder.mkdir(parents=True)
        if module:
            (folder / assignment.module).write_text(stub_source(SOLUTION.read_text()))
        notebook = folder / assignment.notebook
        if what is None:
            notebook.mkdir()
        elif what == "/dev/zero":
            notebook.symlink_to("/dev/zero")
        elif what == "outside":
            notebook.symlink_to(outside)
        else:
            notebook.write_bytes(what)
        folders.append(folder.parent)
    return folders


def _stream(grader, course, folders, assignment):
    """Grade ``folders`` as `grade autograde` does (one session; a fault while preparing one is its
    GraderError, which autograde records as grader-error): {folder name: result or GraderError}."""
    outcomes = {}
    grader.grade_each(iter(folders), (assignment,), seed=1, prepare=lambda path: resolve_submission(path, course),
                      report=lambda path, outcome: outcomes.__setitem__(path.name, outcome))
    return outcomes


def _no_grader_error(outcome, name):
    assert not isinstance(outcome, GraderError) or isinstance(outcome, SubmissionError), (name, outcome)
    if not isinstance(outcome, GraderError):
        statuses = {e.status for a in outcome.assignments for e in a.exercises}
        assert "grader-error" not in statuses, (name, [e.feedback for a in outcome.assignments for e in a.exercises])


def test_a_malformed_notebook_beside_the_module_is_ignored_with_its_reason_and_the_module_graded(
        course, grader, tmp_path):
    """Each case beside the released stub module: the module is graded (every exercise
    not_implemented, scored 0), and each exercise says which notebook was ignored and why."""
    assignment = course.assignment(ASSIGNMENT)
    outcomes = _stream(grader, course, _malformed_folders(tmp_path, assignment, module=True), assignment)
    for index, (name, (_, said)) in enumerate(MALFORMED.items()):
        outcome = outcomes[f"case{index}"]
        _no_grader_error(outcome, name)
        assert not isinstance(outcome, GraderError), (name, outcome)  # the module is graded
        exercises = outcome.assignments[0].exercises
        assert outcome.score == 0 and {e.status for e in exercises} == {"not_implemented"}, name
        for exercise in exercises:
            assert exercise.source == "attention_basics.py", name
            assert said in exercise.source_note and "attention_basics.ipynb" in exercise.source_note, \
                (name, exercise.source_note)
            assert exercise.source_note.endswith("ignored, attention_basics.py graded"), exercise.source_note
            assert "\n" not in exercise.source_note and exercise.source_note in exercise.feedback


def test_a_malformed_notebook_alone_is_each_exercises_error_with_its_reason(course, grader, tmp_path):
    assignment = course.assignment(ASSIGNMENT)
    outcomes = _stream(grader, course, _malformed_folders(tmp_path, assignment, module=False), assignment)
    for index, (name, (what, said)) in enumerate(MALFORMED.items()):
        outcome = outcomes[f"case{index}"]
        _no_grader_error(outcome, name)
        if isinstance(outcome, SubmissionError):  # no notebook found (a folder), or a link: said, scored 0
            assert what is None or isinstance(what, str), (name, outcome)
            continue
        exercises = outcome.assignments[0].exercises
        assert outcome.score == 0 and {e.status for e in exercises} == {"error"}, (name, exercises[0].feedback)
        if name not in ("a cell that does not parse", "a lone surrogate"):  # compiled as written: Python's own error
            assert said in exercises[0].feedback, (name, exercises[0].feedback)


def _mutations(count: int, seed: int = 33) -> list[tuple[str, bytes]]:
    """``count`` notebooks made from a lesson's own by one random change each: a value of the JSON
    replaced by one of another kind, a byte changed, the file cut short, a BOM put in front."""
    original = SOLUTION_NOTEBOOK.read_bytes()
    rng = random.Random(seed)
    others = [None, 0, -1, 10**30, 1.5, "", "x", [], [1, "a"], {}, {"a": None}, [[[]]], True,
              {"cell_type": "code"}, "def softmax(x, dim=-1):\n    return x\n"]

    def paths(value, prefix=()):
        yield prefix
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from paths(inner, prefix + (key,))
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                yield from paths(inner, prefix + (index,))

    made = []
    while len(made) < count:
        kind = rng.choice(["replace", "replace", "replace", "byte", "cut", "bom"])
        if kind == "replace":
            notebook = json.loads(original)
            path = rng.choice([p for p in paths(notebook) if p][:4000])
            target = notebook
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = rng.choice(others)
            made.append((f"{kind} {'/'.join(map(str, path))}", json.dumps(notebook).encode()))
        elif kind == "byte":
            data = bytearray(original)
            data[rng.randrange(len(data))] = rng.randrange(256)
            made.append((kind, bytes(data)))
        elif kind == "cut":
            made.append((kind, original[:rng.randrange(len(original))]))
        else:
            made.append((kind, b"\xef\xbb\xbf" + original))
    return made


def test_no_mutation_of_a_real_notebook_is_a_grader_error(course, grader, tmp_path):
    """30 random mutations of a lesson's notebook, each beside the stub module: each is graded
    (from the notebook where it still reads, else from the module with a note), never grader-error;
    and the worker's reader raises nothing but NotebookError on any of them."""
    from grader.inside.notebook_source import NotebookError, cells_of

    assignment = course.assignment(ASSIGNMENT)
    mutations = _mutations(30)
    folders = []
    for index, (_, data) in enumerate(mutations):
        folder = tmp_path / f"m{index}" / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / assignment.module).write_text(stub_source(SOLUTION.read_text()))
        (folder / assignment.notebook).write_bytes(data)
        folders.append(folder.parent)
        try:
            cells_of(data, assignment.notebook)
        except NotebookError:
            pass
    outcomes = _stream(grader, course, folders, assignment)
    for index, (what, _) in enumerate(mutations):
        outcome = outcomes[f"m{index}"]
        _no_grader_error(outcome, what)
        assert not isinstance(outcome, GraderError), (what, outcome)


SOFTMAX = "def softmax(x, dim=-1):\n    e = (x - x.amax(dim, keepdim=True)).exp()\n" \
          "    return e / e.sum(dim, keepdim=True)\n"
HUGE = {  # 6 to 10 MB notebooks (under the 10 MiB file limit) defining softmax after much else: their cells
    "400,000 statements in one cell": lambda: [["import torch\n"] + [f"x_{i:07d} = 1\n" for i in range(400_000)]],
    "95,000 cells": lambda: ["import torch"] + ["x = 1"] * 95_000,
    "a 3,900,000-item list": lambda: ["import torch", "DATA = [" + ",".join(["1"] * 3_900_000) + "]"],
    "35 chains of 100,000 additions": lambda: ["import torch"] + ["y = " + "+".join(["a"] * 100_000)] * 35,
    "1,900,000 statements on a line": lambda: ["import torch", "x=1;" * 1_900_000],
    "parentheses 3,000,000 deep": lambda: ["import torch", "y = " + "(" * 3_000_000 + "1" + ")" * 3_000_000],
    # within every limit, the most a notebook can cost to read: the longest cells read, of the most items
    "the largest cells allowed": lambda: ["import torch"] + [f"D{i} = [" + "1," * 32_700 + "1]" for i in range(15)],
    "a cell longer than is read": lambda: ["import torch", "D = [" + "1," * 33_000 + "1]"],
    # within the limits too: as many statements as the code allows, each a name defined from the last
    "60,000 statements read": lambda: ["import torch", "x0 = 1"] + ["".join(f"x{i}_{j} = x0\n" for j in range(50))
                                                                   for i in range(1_200)],
}
READ = ("the largest cells allowed", "60,000 statements read")  # the rest are over a limit

_MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # today's readers would take more: a MemoryError
    def peak():
        return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1]) >> 10
    from grader.grading import graded_source as source_choice
    folder = Path(sys.argv[1])
    before, start = peak(), time.monotonic()
    choice = source_choice.choose(folder / "attention_basics.py", folder / "attention_basics.ipynb", ("softmax",))
    took = time.monotonic() - start
    print(json.dumps({"mib": peak() - before, "s": took, "note": choice and choice.notes.get("softmax"),
                      "from_notebook": choice and choice.from_notebook}))
""")


@pytest.mark.parametrize("name", list(HUGE))
def test_a_huge_notebook_costs_the_grading_process_little_memory_and_time(tmp_path, name):
    """What the grading process spends choosing from a notebook beside the module (its own reading,
    in a process of its own): under 100 MiB more than before it (a clean grading process holds some
    250 MiB, so well within twice that) and a few seconds; over a limit, the notebook is ignored
    with the limit named; the largest cells allowed are read."""
    folder = tmp_path / ASSIGNMENT
    folder.mkdir()
    (folder / "attention_basics.py").write_text(stub_source(SOLUTION.read_text()))
    (folder / "attention_basics.ipynb").write_bytes(_notebook(*map(_code, HUGE[name]() + [SOFTMAX])))
    try:
        done = subprocess.run([sys.executable, "-c", _MEASURE, str(folder)], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: reading the notebook took over 120 s")
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["mib"] < 100 and measured["s"] < 10, (name, measured)
    if name in READ:
        assert measured["from_notebook"] == ["softmax"], measured
    else:
        assert "ignored, attention_basics.py graded" in measured["note"], measured
        assert "too large to read" in measured["note"] or "are read in one cell" in measured["note"], measured


def test_nothing_parsed_is_kept_for_the_batch(tmp_path):
    """What the grading process remembers of a file it read (a class hands in the same notebooks) is
    names and digests, never a syntax tree."""
    import ast

    from grader.grading import graded_source as source_choice

    folder = tmp_path / ASSIGNMENT
    folder.mkdir()
    (folder / "attention_basics.py").write_text(stub_source(SOLUTION.read_text()))
    shutil.copy(SOLUTION_NOTEBOOK, folder / "attention_basics.ipynb")
    source_choice._PARSED.clear()
    choice = source_choice.choose(folder / "attention_basics.py", folder / "attention_basics.ipynb", ("softmax",))
    assert choice.from_notebook and len(source_choice._PARSED) == 2
    for facts in source_choice._PARSED.values():
        for written in facts.values():
            if written is not None:
                assert not any(isinstance(value, (ast.AST, list)) for value in vars(written).values()), written
                assert all(isinstance(value, (bytes, type(None))) for value in vars(written).values()), written


def test_a_huge_notebook_beside_the_module_is_graded_from_the_module_and_the_next_submission_as_ever(
        course, grader, tmp_path):
    """End to end, as `grade autograde` grades a batch: a 9 MB notebook of 95,000 cells beside the stub
    module, then a bystander with the right module: the first scores 0 with the note, in seconds; the
    second full marks."""
    assignment = course.assignment(ASSIGNMENT)
    huge = tmp_path / "huge" / ASSIGNMENT
    huge.mkdir(parents=True)
    (huge / assignment.module).write_text(stub_source(SOLUTION.read_text()))
    cells = [_code("import torch")] + [_code("x = 1")] * 95_000 + \
        [_code("def softmax(x, dim=-1):\n    return x.softmax(dim)\n")]
    (huge / assignment.notebook).write_bytes(_notebook(*cells))
    bystander = tmp_path / "bystander" / ASSIGNMENT
    bystander.mkdir(parents=True)
    shutil.copy(SOLUTION, bystander / assignment.module)
    outcomes = _stream(grader, course, [huge.parent, bystander.parent], assignment)
    first, second = outcomes["huge"], outcomes["bystander"]
    _no_grader_error(first, "huge")
    assert first.score == 0 and first.duration_s < 10, first.duration_s
    note = first.assignments[0].exercises[0].source_note
    assert note.startswith("attention_basics.ipynb is too large to read ("), note
    assert second.score == second.max_score
