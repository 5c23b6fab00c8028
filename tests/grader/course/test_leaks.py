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


def test_no_mistake_model_the_distribution_ships_is_a_right_answer_when_pasted(course, grader, submission_dir):
    """Red team round 30c (L2): checks_05's tiled_without_rescaling, which the student distribution shipped (its
    suites/lesson), pasted as it shipped into 05's stub, scored flash_attention 60/60: with its default settings it
    forgot nothing. The contract: no code of a right implementation in the student distribution. A release now
    ships every @model function of the lesson without its body (grader/course/answers.py): pasted, it computes
    nothing."""
    import ast

    from grader.course.answers import stripped
    from grader.submission import resolve_submission

    shipped = stripped((ROOT / "suites" / "lesson" / "checks_05.py").read_text())
    tree = ast.parse(shipped)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "tiled_without_rescaling")
    lines = shipped.splitlines()
    model = "\n".join(lines[function.lineno - 1:function.end_lineno]).replace("    import torch\n\n", "", 1)
    assert "softmax" not in model and "exp" not in model
    module = submission_dir / "05_efficient_attention" / "efficient_attention.py"
    module.write_text(module.read_text() + "\n\n" + model + "\n\ndef flash_attention(queries, keys, values, "
                      "block_size=64, causal=False):\n    return tiled_without_rescaling(queries, keys, values, "
                      "block_size, causal).to(queries.dtype)\n")
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("05_efficient_attention"),),
                          seed=3)
    flash = next(e for e in result.assignments[0].exercises if e.name == "flash_attention")
    assert flash.score == 0
