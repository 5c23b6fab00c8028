"""Leak scanning (grader/course/leaks.py): what must never reach a student is found wherever it hides."""
from pathlib import Path

from grader.course.leaks import leaks, leaks_in, solution_lines

ROOT = Path(__file__).resolve().parents[3]


def test_leaks_of_solutions_hidden_tests_and_reference_paths_are_found(tmp_path):
    (tmp_path / "a.py").write_text("### BEGIN SOLUTION\n")
    (tmp_path / "b.ipynb").write_text('{"source": "### BEGIN HIDDEN TESTS"}')
    (tmp_path / "c.py").write_text("open('../solutions/01/x.py')")
    (tmp_path / "d.py").write_text("print('fine')")
    assert [s.path.name for s in leaks(tmp_path)] == ["a.py", "b.ipynb", "c.py"]


def test_a_leaking_file_is_found(course, tmp_path):
    (tmp_path / "suites" / "hidden").mkdir(parents=True)
    (tmp_path / "suites" / "hidden" / "copy.py").write_text("x = 1\n")
    body = sorted(solution_lines(course))[0]  # a line of a solution block found nowhere else
    (tmp_path / "notes.md").write_text(f"# notes\n    {body}\n")
    hidden = (ROOT / "suites" / "hidden" / f"test_{course.assignments[0].id}.py").read_text()
    (tmp_path / "borrowed.py").write_text(hidden[len(hidden) // 2:])
    (tmp_path / "fine.py").write_text("print('mine')\n")
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "shared.py").write_text(hidden[len(hidden) // 2:])  # the library the suites import
    (tmp_path / "grader" / "answer.py").write_text(f"def f():\n    {body}\n")
    assert {p.path.name for p in leaks_in(course, tmp_path)} == {"copy.py", "notes.md", "borrowed.py", "answer.py"}
