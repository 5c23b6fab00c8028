"""A folder of results (grader/reporting/result_folder.py): the manifest says which result files grade autograde
wrote; summary.csv lists only those, with each submission's overall status."""
import csv
import json

from grader.batch.autograde import failed_result
from grader.reporting.result_folder import (LOCK, MANIFEST, locked, overall_status, read_manifest, sort_results,
                                            write_atomically, write_manifest, write_summary)
from grader.results import AssignmentResult, CheckOutcome, ExerciseResult, SubmissionResult


def result_text(name: str, score: float = 1.0) -> str:
    return json.dumps({"schema": 1, "submission": name, "seed": 1, "score": score, "max_score": 1.0,
                       "assignments": []}, indent=2) + "\n"


SECRET = bytes(range(32))  # the course's (grader/reporting/course_secret.py)


def run(folder, names, **options):
    """What grade autograde does at the end of a run: write each result, then the manifest."""
    written = {name: result_text(name) for name in names}
    for name, text in written.items():
        write_atomically(folder / f"{name}.json", text)
    return write_manifest(folder, written, secret=SECRET, **options)


def test_only_listed_unchanged_files_are_believed(tmp_path):
    run(tmp_path, ["alice", "bob"])
    (tmp_path / "mallory.json").write_text(result_text("mallory", 100))  # dropped by student code
    (tmp_path / "bob.json").write_text(result_text("bob", 100))  # changed by student code
    believed, others = sort_results(tmp_path, secret=SECRET)
    assert [p.name for p in believed] == ["alice.json"]
    assert [p.name for p in others] == ["bob.json", "mallory.json"]
    assert MANIFEST not in {p.name for p in [*believed, *others]}  # never taken for a result


def test_a_later_run_keeps_earlier_results_only_while_they_are_as_listed(tmp_path):
    run(tmp_path, ["alice", "bob"])
    earlier = read_manifest(tmp_path)
    (tmp_path / "bob.json").write_text(result_text("bob", 100))  # during the next run, by its student code
    run(tmp_path, ["carol"], earlier=earlier)
    assert set(read_manifest(tmp_path)) == {"alice.json", "carol.json"}


def test_a_manifest_forged_during_a_run_lists_nothing_when_student_code_ran_as_this_user(tmp_path):
    run(tmp_path, ["alice"])
    earlier = read_manifest(tmp_path)  # read before student code runs
    forged = result_text("mallory", 100)
    (tmp_path / "mallory.json").write_text(forged)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    from grader.reporting.result_folder import digest

    manifest["results"]["mallory.json"] = digest(SECRET, "mallory.json", forged)  # even with the secret
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))  # student code, as the grader's user
    assert run(tmp_path, ["bob"], earlier=earlier, trust_meanwhile=False) == ["mallory.json"]
    assert set(read_manifest(tmp_path)) == {"alice.json", "bob.json"}


def test_runs_at_the_same_time_into_one_folder_keep_each_others_results_when_confined(tmp_path):
    """A Slurm array writing one folder: shard 2 ends while shard 1 still runs."""
    earlier = read_manifest(tmp_path) or {}
    run(tmp_path, ["bob"], earlier=read_manifest(tmp_path) or {})  # shard 2
    run(tmp_path, ["alice"], earlier=earlier, trust_meanwhile=True)  # shard 1, sandboxed
    assert set(read_manifest(tmp_path)) == {"alice.json", "bob.json"}


def test_the_lock_serialises_runs_and_a_held_lock_only_delays(tmp_path):
    import fcntl
    import os
    import time

    handle = os.open(tmp_path / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(handle, fcntl.LOCK_EX)  # another run holds it, and never lets go
    started = time.monotonic()
    with locked(tmp_path, timeout_s=0.5):
        waited = time.monotonic() - started
    os.close(handle)
    assert 0.4 < waited < 5
    (tmp_path / LOCK).unlink()
    (tmp_path / LOCK).symlink_to(tmp_path / "elsewhere")  # not a plain file: no lock, and no crash
    with locked(tmp_path):
        pass
    assert not (tmp_path / "elsewhere").exists()


def test_a_lone_surrogate_is_written_escaped_not_a_crash(tmp_path):
    write_atomically(tmp_path / "x.txt", "caf\udce9\n")
    assert (tmp_path / "x.txt").read_text(encoding="utf-8") == "caf\\udce9\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]  # no temporary left


def test_summary_has_the_status_of_each_submission_last(course, tmp_path):
    graded = SubmissionResult("alice", 1, "cpu", 1.0, [AssignmentResult("01_attention_basics", "Basics", [
        ExerciseResult("softmax", 25.0, [CheckOutcome("softmax_random", 1, "failed", "off")])])])
    texts = {"alice": json.dumps(graded.to_json()),
             "bob": json.dumps(failed_result(course.assignments, "bob", "error", "not a valid .zip file", 1).to_json()),
             "erin": json.dumps(failed_result(course.assignments, "erin", "crashed", "crashed twice", 1).to_json())}
    for name, text in texts.items():
        (tmp_path / f"{name}.json").write_text(text)
    write_manifest(tmp_path, texts, secret=SECRET)
    write_summary(tmp_path, course, secret=SECRET)
    rows = list(csv.reader((tmp_path / "summary.csv").open(newline="")))
    exercises = [f"{a.id}:{e}" for a in course.assignments for e in a.exercises]
    assert rows[0] == ["submission", "score", "max_score", "seed", *exercises, "status"]
    assert {row[0]: row[-1] for row in rows[1:]} == {"alice": "graded", "bob": "error", "erin": "crashed"}
    # issue 45: bob's corrupt zip holds no score (empty cells, never 0); erin's code ran and crashed: 0 is hers
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["bob"][1] == "" and by_name["bob"][4:-1] == [""] * len(exercises) and by_name["bob"][2] == "600.0"
    assert by_name["erin"][1] == "0.0" and by_name["erin"][4:-1] == ["0.0"] * len(exercises)


def test_a_result_made_without_grading_says_why_it_was_not_graded_and_that_it_never_ran(course):
    from grader.reporting.result_folder import never_ran, not_graded

    unread = failed_result(course.assignments, "bob", "error", "bob.zip is not a valid .zip file (BadZipFile)", 1)
    assert not_graded(unread.to_json()) == "bob.zip is not a valid .zip file (BadZipFile)"
    assert never_ran(unread.to_json())
    crashed = failed_result(course.assignments, "erin", "crashed", "crashed twice", 1).to_json()
    assert not_graded(crashed) == "" and never_ran(crashed)
    graded = SubmissionResult("alice", 1, "cpu", 1.0, [AssignmentResult("01_attention_basics", "Basics", [
        ExerciseResult("softmax", 25.0, [CheckOutcome("softmax_random", 1, "error", "boom")])])]).to_json()
    assert not_graded(graded) == "" and not never_ran(graded)  # its code ran and raised: a score of 0


def test_overall_status_is_graded_unless_the_submission_check_failed_everything(course):
    data = failed_result(course.assignments, "bob", "timeout", "too slow", 1).to_json()
    assert overall_status(data) == "timeout"
    data["assignments"][0]["exercises"][0]["checks"] = [{"name": "softmax_random", "status": "error", "weight": 1}]
    data["assignments"][0]["exercises"][0]["status"] = "error"
    assert overall_status(data) == "graded"  # one exercise was really graded (and failed)
    assert overall_status({"assignments": []}) == "graded"


def test_summary_takes_a_name_that_is_a_formula_as_text_and_keeps_numbers_numbers(course, tmp_path):
    """Names are folder names a student chose: none may run as a formula where summary.csv is opened."""
    names = ['=HYPERLINK("http://x","y")', "+600+0", "@SUM(A1)", "-1+601", "\tx", "\r=1+1", "ann"]
    texts = {f"s{index}": result_text(name, 0.5) for index, name in enumerate(names)}
    for stem, text in texts.items():
        (tmp_path / f"{stem}.json").write_text(text)
    write_manifest(tmp_path, texts, secret=SECRET)
    write_summary(tmp_path, course, secret=SECRET)
    rows = list(csv.reader((tmp_path / "summary.csv").open(newline="")))
    assert [row[0] for row in rows[1:]] == [f"'{name}" for name in names[:-1]] + ["ann"]
    assert [row[1:4] for row in rows[1:]] == [["0.5", "1.0", "1"]] * len(names)


def test_the_times_results_were_written_are_believed_only_where_the_manifests_key_over_them_verifies(tmp_path):
    """Red team round 30b (K1): the manifest's "written" times decide which of two genuine results of a name wins
    an export's merge, and nothing keyed them: whoever could write the manifest chose. They are keyed with the
    seed now; changed, the folder is refused; a manifest without the key (an older grader's) gives no time."""
    import pytest

    from grader.errors import UntrustedResults
    from grader.reporting.result_folder import written_at

    run(tmp_path, ["alice"])
    assert set(written_at(tmp_path, SECRET)) == {"alice.json"}
    assert written_at(tmp_path, None) == {}
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    manifest["written"]["alice.json"] += 10**6  # a later time, to win a merge
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(UntrustedResults, match="times its results were written"):
        written_at(tmp_path, SECRET)
    del manifest["written_key"]
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    assert written_at(tmp_path, SECRET) == {}


def test_a_results_folder_another_user_owns_or_may_write_is_refused_for_export(tmp_path):
    """Red team round 30b (K1): `grade export` and `grade report` read a results folder owned by an ordinary user
    (who, with a course secret they could read, signed a forged manifest): a folder, manifest or result that
    belongs to another user than you or root, or that group or others may write, is refused, as --out is."""
    import os

    import pytest

    from grader.errors import UntrustedResults
    from grader.reporting.result_folder import check_read

    folder = tmp_path / "results"
    folder.mkdir()
    run(folder, ["alice"])
    check_read(folder)  # yours: read
    (folder / "alice.json").chmod(0o666)
    with pytest.raises(UntrustedResults, match="can be written by group and others"):
        check_read(folder)
    (folder / "alice.json").chmod(0o644)
    if os.geteuid() == 0:  # another user's folder, as root reads it
        os.chown(folder / MANIFEST, 1001, 1001)
        with pytest.raises(UntrustedResults, match="belongs to uid 1001"):
            check_read(folder)


def test_an_output_is_never_written_through_a_link_or_into_another_users_file(tmp_path):
    """Red team round 30c (X1, X2, X4): root's `grade export --output` and `grade report --out` wrote into a file an
    ordinary user had made beforehand in a shared folder (who then changed the grades in it), and through their
    link into a bystander's result. A link or another user's file is refused; the text goes into a new file renamed
    into place, never through the one that was there."""
    import os

    import pytest

    from grader.errors import UntrustedResults
    from grader.reporting.result_folder import _umask, write_output

    victim = tmp_path / "bob.json"
    victim.write_text("bob's result")
    (tmp_path / "out.csv").symlink_to(victim)
    with pytest.raises(UntrustedResults, match="is a link"):
        write_output(tmp_path / "out.csv", "grades")
    assert victim.read_text() == "bob's result"
    made = tmp_path / "made.csv"
    made.write_text("old")
    made.chmod(0o666)
    linked = tmp_path / "other-name"
    os.link(made, linked)  # a second name of the same file: what a co-tenant keeps to edit it later
    write_output(made, "grades")
    assert made.read_text() == "grades" and linked.read_text() == "old"  # a new file, not the one that was there
    assert made.stat().st_mode & 0o777 == 0o666 & ~_umask()  # as a file the user made would be
    if os.geteuid() == 0:
        os.chown(made, 1001, 1001)
        with pytest.raises(UntrustedResults, match="belongs to uid 1001"):
            write_output(made, "grades")


def test_a_figure_is_never_written_through_a_link_nor_into_a_folder_another_user_can_write(tmp_path):
    """Red team round 32 (F1): an ordinary user put links, named as `grade check --figures DIR` names its PNGs, in
    the folder root then wrote figures into; root's PNG went through them over a bystander's signed result, and
    `grade export` refused the whole class. A figures folder that is a link, another user's, or writable by others
    is refused; a link in it is never written through; each PNG is a new file renamed into place."""
    import os
    from types import SimpleNamespace

    import pytest

    from grader.errors import UntrustedResults
    from grader.reporting.figures import write_pngs

    figure = {"kind": "weights", "title": "softmax", "row_labels": ["a", "b"], "col_labels": ["a", "b"],
              "theirs": [[0.5, 0.5], [1.0, 0.0]], "right": [[0.5, 0.5], [0.0, 1.0]],
              "differs": [[False, False], [True, True]]}
    exercise = SimpleNamespace(name="softmax", figure=figure, status="failed")
    result = SimpleNamespace(assignments=[SimpleNamespace(id="01_attention_basics", exercises=[exercise])])
    victim = tmp_path / "results" / "bob.json"
    victim.parent.mkdir()
    victim.write_text("bob's result")
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "01_attention_basics-softmax.png").symlink_to(victim)
    with pytest.raises(UntrustedResults, match="is a link"):
        write_pngs(result, figures)
    assert victim.read_text() == "bob's result"
    (tmp_path / "linked").symlink_to(victim.parent)
    with pytest.raises(UntrustedResults, match="is a link"):
        write_pngs(result, tmp_path / "linked")
    assert sorted(p.name for p in victim.parent.iterdir()) == ["bob.json"]
    figures.chmod(0o777)
    with pytest.raises(UntrustedResults, match="can be written by group and others"):
        write_pngs(result, figures)
    if os.geteuid() == 0:
        figures.chmod(0o755)
        os.chown(figures, 1001, 1001)
        with pytest.raises(UntrustedResults, match="belongs to uid 1001"):
            write_pngs(result, figures)
    own = tmp_path / "own"
    (written,) = write_pngs(result, own)
    assert written.read_bytes().startswith(b"\x89PNG") and not written.is_symlink()
    # an exercise right now loses its old PNG, from a folder of the grader's only (review of round 32: the stale PNG
    # was removed through a linked folder, from wherever the link led)
    passed = SimpleNamespace(assignments=[SimpleNamespace(id="01_attention_basics", exercises=[
        SimpleNamespace(name="softmax", figure=figure, status="passed")])])
    kept = victim.parent / "01_attention_basics-softmax.png"
    kept.write_text("bob's figure")
    with pytest.raises(UntrustedResults, match="is a link"):
        write_pngs(passed, tmp_path / "linked", pictured=[("01_attention_basics", "softmax")])
    assert kept.read_text() == "bob's figure"
    assert write_pngs(passed, own, pictured=[("01_attention_basics", "softmax")]) == [] and not written.exists()
    assert write_pngs(passed, tmp_path / "none", pictured=[("01_attention_basics", "softmax")]) == []
    assert not (tmp_path / "none").exists()  # (no folder made to remove nothing from)
