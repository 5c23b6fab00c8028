"""What a grading run produces (grader/results.py): text from student code is made safe and bounded
once, where a check's outcome is made, so no report or result file can be broken by it."""
import json

from grader.results import (FEEDBACK_LIMIT, MESSAGE_LIMIT, AssignmentResult, CheckOutcome, ExerciseResult,
                            SubmissionResult, plain_text)


def test_plain_text_keeps_lines_and_tabs_and_shows_what_it_cannot_keep():
    assert plain_text("line one\n\tline two", 100) == "line one\n\tline two"
    assert plain_text("caf\udce9", 100) == "caf\\udce9"  # a lone surrogate, as an escape
    assert plain_text("a\x00b\x1b[31mc\x7f\r\ufffe\uffff", 100) == "a\ufffdb\ufffd[31mc\ufffd\ufffd\ufffd\ufffd"
    assert plain_text("héllo ✓", 100) == "héllo ✓"


def test_plain_text_says_how_much_it_cut():
    assert plain_text("x" * 25, 10) == "x" * 10 + " ... (15 characters cut)"
    assert plain_text("x" * 10, 10) == "x" * 10


def test_a_check_message_and_an_exercise_feedback_are_bounded():
    checks = [CheckOutcome(f"check_{n}", 1, "failed", "y" * 5 * MESSAGE_LIMIT) for n in range(3)]
    assert all(len(c.message) < MESSAGE_LIMIT + 40 and c.message.endswith("characters cut)") for c in checks)
    exercise = ExerciseResult("softmax", 10.0, checks)
    assert len(exercise.feedback) < FEEDBACK_LIMIT + 40


def test_an_odd_submission_name_is_made_safe_and_the_result_is_utf8_json():
    result = SubmissionResult("caf\udce9\x00", 1, "cpu", 0.0, [AssignmentResult("01", "Basics", [
        ExerciseResult("softmax", 1.0, [CheckOutcome("softmax_random", 1, "error", "boom \udcff")])])])
    assert result.submission == "caf\\udce9\ufffd"
    text = json.dumps(result.to_json(), ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogate anywhere
    assert json.loads(text)["assignments"][0]["exercises"][0]["feedback"] == "softmax_random: boom \\udcff"


def test_a_check_right_given_the_students_helper_scores_and_its_note_is_said_once():
    note = "right, given your softmax, which this uses; but your softmax is wrong (...): fix the softmax exercise"
    exercise = ExerciseResult("simple_self_attention", 20.0, [CheckOutcome("lesson", 1, "passed", note),
                                                             CheckOutcome("random", 2, "passed", note),
                                                             CheckOutcome("vectorised", 2, "passed")])
    assert exercise.status == "passed" and exercise.score == 20.0 and exercise.misconceptions == []
    assert exercise.notes == [note] and exercise.feedback.count(note) == 1
    shown = AssignmentResult("01", "Basics", [exercise]).feedback_said_once()
    assert note in shown["simple_self_attention"]
    quiet = ExerciseResult("softmax", 25.0, [CheckOutcome("lesson", 1, "passed")])
    assert AssignmentResult("01", "Basics", [quiet]).feedback_said_once() == {}


def test_a_check_whose_output_is_right_and_gradients_wrong_keeps_the_forwards_share():
    """Issue 46: a right forward whose backward fails (an in-place change on exp's output) kept 8/40: each
    such check now keeps half its weight, said in the check's message and in the JSON's checks."""
    from grader.results import CheckOutcome, ExerciseResult

    exercise = ExerciseResult("softmax", 20.0, [CheckOutcome("a", 1.0, "passed"),
                                                CheckOutcome("b", 1.0, "failed", "gradients", kept=0.5),
                                                CheckOutcome("c", 2.0, "failed", "wrong")])
    assert exercise.score == 20.0 * 1.5 / 4
    assert [c.get("kept") for c in exercise.to_json()["checks"]] == [None, 0.5, None]


def test_what_most_failing_checks_show_is_said_where_another_contradicts_the_name():
    """Session 22's porters: an attention_weights taking its softmax over the queries, with a right handling of
    fully hidden rows that no mistake model has, got only numbers: one failing case contradicted the name, and
    with the name went the first check's explanation. What most failing checks show is said, naming no id; a
    minority explains nothing."""
    def check(name, ids=(), why=""):
        plain = f"{name}: the output is off at 6 of 6 entries"
        return CheckOutcome(name, 1.0, "failed", plain + (f"; {why}" if why else ""), misconceptions=ids,
                            unexplained=plain, ruled_out=() if ids else ("softmax-wrong-dim",))

    why = "your softmax runs over the queries, not the keys"
    mostly = ExerciseResult("attention_weights", 20, [check("lesson", ("softmax-wrong-dim",), why),
                                                      check("random", ("softmax-wrong-dim",), why),
                                                      check("fully_hidden_row")])
    assert mostly.misconceptions == []
    assert f"On 2 of the 3 failing checks {why}; fully_hidden_row is off in another way too" in mostly.feedback
    assert "softmax-wrong-dim" not in mostly.feedback  # no id named
    few = ExerciseResult("attention_weights", 20, [check("lesson", ("softmax-wrong-dim",), why),
                                                   check("random"), check("fully_hidden_row")])
    assert why not in few.feedback
