"""``grade report``: what the class got wrong (grader/reporting/class_report.py, grader/reporting/class_page.py)."""
import csv
import io
import json
import sys
from pathlib import Path

import pytest

from grader.reporting.class_report import pseudonym, render, summarise

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

MODULE = ROOT / "solutions" / "01_attention_basics" / "attention_basics.py"
SECRET = bytes(range(32))  # a course's secret, as grader.reporting.class_report.course_secret keeps it
# five students with mistakes from the corpus, two of them sharing one (issue 23's "done when")
MISTAKES = {"dora": "softmax-wrong-dim/ignores_dim.py", "eli": "softmax-wrong-dim/blind_01_softmax_hardcoded_last_dim.py",
            "fay": "input-mutated/shift_in_place.py", "gus": "not-vectorised/row_by_row.py",
            "hal": "values-not-used/blind_01_simple_self_attention_returns_weights.py"}


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """A class of eight graded by grade autograde on 01: three right, five with mistakes."""
    from grader.batch.autograde import autograde

    root = tmp_path_factory.mktemp("class")
    for name in ("ann", "bea", "cyd", *MISTAKES):
        folder = root / name / "01_attention_basics"
        folder.mkdir(parents=True)
        text = MODULE.read_text()
        if name in MISTAKES:
            text = corpus.splice(text, (ROOT / "tests" / "corpus" / "mistakes" / MISTAKES[name]).read_text())
        (folder / "attention_basics.py").write_text(text)
    out = root.parent / f"{root.name}-results"
    autograde(course=course, paths=[root], out=out, workers=2, shard=None, resume=False, device="cpu", seed=3,
              assignments=(course.assignment("01_attention_basics"),))
    return out


def _results(out: Path) -> list[dict]:
    from grader.reporting.class_report import course_secret, gather

    return gather([out], [], secret=course_secret(ROOT))


def test_every_misconception_is_named_with_its_students_and_ranked_by_points_lost(graded):
    results = _results(graded)
    summary = summarise(results)
    named = {}
    for data in results:
        for exercise in data["assignments"][0]["exercises"]:
            for misconception in exercise["misconceptions"]:
                named.setdefault(misconception, set()).add(data["submission"])
    assert named, "the corpus mistakes were named"
    assert {m["id"]: m["students"] for m in summary["misconceptions"]} == {k: len(v) for k, v in named.items()}
    assert {m["id"]: set(m["names"]) for m in summary["misconceptions"]} == named
    assert named["softmax-wrong-dim"] >= {"dora", "eli"}
    lost = [m["points_lost"] for m in summary["misconceptions"]]
    assert lost == sorted(lost, reverse=True) and lost[0] > 0
    first = summary["misconceptions"][0]
    assert first["explanation"] and first["hint"] and first["exercises"]
    (assignment,) = summary["assignments"]
    assert assignment["students"] == 8 and assignment["counts"]["full"] == 3 and sum(assignment["histogram"]) == 8
    total_lost = sum(e["points_lost"] for e in assignment["exercises"])
    assert total_lost == pytest.approx(sum(d["max_score"] - d["score"] for d in results))


def test_the_other_formats_carry_the_same_numbers_and_anonymising_is_stable(graded):
    results = _results(graded)
    summary = summarise(results)
    assert json.loads(render(summary, "json")) == json.loads(json.dumps(summary))
    rows = list(csv.DictReader(io.StringIO(render(summary, "csv"))))
    by_id = {}
    for row in rows:
        if row["misconception"]:
            by_id[row["misconception"]] = by_id.get(row["misconception"], 0) + float(row["points_lost"])
    assert by_id == pytest.approx({m["id"]: m["points_lost"] for m in summary["misconceptions"]})
    markdown = render(summary, "markdown")
    assert all(f"`{m['id']}`" in markdown for m in summary["misconceptions"])
    hidden = summarise(results, secret=SECRET)
    text = render(hidden, "html") + render(hidden, "json")
    assert not any(name in text for name in ("ann", "dora", "hal"))
    assert {m["id"]: m["students"] for m in hidden["misconceptions"]} == \
        {m["id"]: m["students"] for m in summary["misconceptions"]}
    assert pseudonym("dora", SECRET) == pseudonym("dora", SECRET) != pseudonym("eli", SECRET)
    assert pseudonym("dora", SECRET) in {n for m in hidden["misconceptions"] for n in m["names"]}


def test_the_page_is_one_file_that_needs_nothing_else_and_shows_each_students_feedback(graded):
    results = _results(graded)
    summary = summarise(results)
    page = render(summary, "html")
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and page.count("<svg") == 3  # scores, points missed, misconceptions
    assert page.count('role="img"') == 3 and "<title id=" in page and "<desc id=" in page
    for m in summary["misconceptions"]:
        assert f'data-label="{m["id"]}" data-value="{m["points_lost"]:g}"' in page
    from grader.reporting.formats import table_of

    dora = next(d for d in results if d["submission"] == "dora")
    assert "softmax-wrong-dim" in table_of(dora) and table_of(dora).splitlines()[0].startswith("01_attention_basics")
    from html import escape

    assert escape(table_of(dora)) in page


def test_grade_report_writes_the_page_and_says_where(graded, tmp_path):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "grader", "report", str(graded), "--out", str(tmp_path / "r.html")],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>") and "r.html" in done.stderr
    missing = subprocess.run([sys.executable, "-m", "grader", "report", str(tmp_path / "nothing")], cwd=ROOT,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "no results folder" in missing.stderr and "Traceback" not in missing.stderr


CHROMIUM = "/usr/bin/chromium"


def _opened(browser, path, errors):
    """``path`` opened in a page of ``browser``, its console errors and page errors going to ``errors``."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    return page


def _in_chromium(path, read) -> list[str]:
    """``read(page)`` on ``path`` in headless Chromium (skipped where it is missing); the page's errors."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    errors = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            read(_opened(browser, path, errors))
        finally:
            browser.close()
    return errors


@pytest.mark.slow
def test_the_page_renders_in_a_real_browser_with_its_charts_drawn(graded, tmp_path):
    """Headless Chromium (Debian's, driven by playwright): no console error, the charts' bars are the
    JSON's numbers and are drawn (a width or height where the number is not 0), the screenshot is not blank."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    summary = summarise(_results(graded))
    path = tmp_path / "report.html"
    path.write_text(render(summary, "html"), encoding="utf-8")
    errors = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = _opened(browser, path, errors)
            bars = page.eval_on_selector_all(
                "svg#misconceptions rect.bar",
                "els => els.map(e => [e.dataset.label, parseFloat(e.dataset.value), e.getBBox().width])")
            histogram = page.eval_on_selector_all(
                "svg#hist-01_attention_basics rect.bar", "els => els.map(e => [parseFloat(e.dataset.value), "
                                                         "e.getBBox().height])")
            shot = page.screenshot(full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert [(label, value) for label, value, _ in bars] == [(m["id"], m["points_lost"]) for m in summary["misconceptions"]]
    assert all(width > 0 for _, value, width in bars if value > 0)
    assert [value for value, _ in histogram] == summary["assignments"][0]["histogram"]
    assert all((height > 0) == (value > 0) for value, height in histogram)
    from PIL import Image

    image = Image.open(io.BytesIO(shot)).convert("RGB")
    assert image.width == 1280 and len(image.getcolors(maxcolors=1 << 20) or range(1 << 20)) > 50  # not blank


def _result(name, exercises, assignment="01_attention_basics"):
    """A hand-made result: ``exercises`` as (name, score, max_score, status, misconceptions)."""
    rows = [{"name": n, "score": sc, "max_score": top, "status": st, "misconceptions": list(ms),
             "feedback": "" if st == "passed" else f"{n}: wrong in /home/{name}/attention_basics.py"}
            for n, sc, top, st, ms in exercises]
    score = sum(r["score"] for r in rows)
    return {"schema": 1, "submission": name, "seed": 1, "device": "cpu", "score": score, "duration_s": 1.0,
            "max_score": sum(r["max_score"] for r in rows),
            "assignments": [{"id": assignment, "score": score, "max_score": 30, "exercises": rows}]}


def test_blind_findings_outcomes_per_exercise_points_and_names_in_feedback():
    """What a helper that never saw this code found (tests written from its findings): a timeout or an
    error counts as such whatever the score; a misconception's points in each exercise are its own
    there; --anonymise hides a name in a traceback's path too."""
    results = [
        _result("grace", [("a", 10, 10, "passed", ()), ("b", 5, 10, "timeout", ()), ("c", 0, 10, "failed", ("m1",))]),
        _result("judy", [("a", 10, 10, "passed", ()), ("b", 0, 10, "error", ()), ("c", 10, 10, "passed", ())]),
        _result("kim", [("a", 0, 10, "failed", ("m1", "m2")), ("b", 10, 10, "passed", ()), ("c", 5, 10, "failed", ("m1",))]),
        _result("lee", [("a", 10, 10, "passed", ()), ("b", 10, 10, "passed", ()), ("c", 10, 10, "passed", ())]),
    ]
    summary = summarise(results)
    counts = summary["assignments"][0]["counts"]
    assert (counts["timeout"], counts["error"], counts["partial"], counts["full"]) == (1, 1, 1, 1)
    m1 = next(m for m in summary["misconceptions"] if m["id"] == "m1")
    assert m1["points_lost"] == 20 and m1["students"] == 2
    assert {e["exercise"]: e["points_lost"] for e in m1["exercises"]} == {"01_attention_basics:a": 5,
                                                                          "01_attention_basics:c": 15}
    rows = list(csv.DictReader(io.StringIO(render(summary, "csv"))))
    assert {(r["exercise"], r["points_lost"]) for r in rows if r["misconception"] == "m1"} == {("a", "5"), ("c", "15")}
    markdown = render(summary, "markdown")
    assert "| grader error |" in markdown and "| 01_attention_basics:c | 15 |" in markdown
    hidden = summarise(results, secret=SECRET)
    text = render(hidden, "json") + render(hidden, "html") + render(hidden, "csv") + render(hidden, "markdown")
    assert not any(name in text for name in ("grace", "judy", "kim", "lee"))
    assert pseudonym("judy", SECRET) in text


# --- names as data (issue 33, items 4 and 5) ----------------------------------------------------------------
HOSTILE = ("<img src=x onerror=alert(1)>", "![p](http://evil/p.png)", "[x](javascript:alert(1))", "**loud**",
           "- a | b", "`tick` & <b>")


def _shown(markdown: str) -> tuple[str, str]:
    """What a reader sees of ``markdown`` (CommonMark with GitHub's tables, raw HTML allowed as GitHub's
    step summary allows some): the HTML it renders, and that HTML's text."""
    from html import unescape
    import re

    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    return rendered, unescape(re.sub(r"<[^>]+>", "", rendered))


def test_markdown_shows_every_name_as_written_never_as_html_an_image_or_a_link():
    results = [_result(name, [("a", 0, 10, "failed", ())]) for name in HOSTILE]
    results.append(_result("fine", [("a", 10, 10, "passed", ())]))
    markdown = render(summarise(results), "markdown")
    rendered, text = _shown(markdown)
    assert "<img" not in rendered and "<a " not in rendered and "<b>" not in rendered and "<strong>" not in rendered
    assert "<li>" in rendered and rendered.count("<table>") == 3  # the report's own markup still renders
    for name in HOSTILE:
        assert f"{name}: 0 points" in text  # each in "Who needs help", as written


def test_the_anonymised_report_of_a_class_with_students_named_0_id_and_softmax_keeps_its_numbers():
    """Before, names were replaced in the JSON text: ``0`` broke it (JSONDecodeError), ``id`` lost keys
    (KeyError), ``softmax`` renamed an exercise, so its points moved to an exercise that does not exist."""
    exercises = [("softmax", 0, 10, "failed", ("softmax-wrong-dim",)), ("id", 10, 10, "passed", ()),
                 ("c", 5, 10, "failed", ())]
    results = [_result(name, exercises) for name in ("0", "id", "softmax", "ann")]
    plain, hidden = summarise(results), summarise(results, secret=SECRET)
    assert hidden["assignments"] == plain["assignments"]
    assert [e["name"] for e in hidden["assignments"][0]["exercises"]] == ["softmax", "id", "c"]
    assert [{**m, "names": []} for m in hidden["misconceptions"]] == [{**m, "names": []} for m in plain["misconceptions"]]
    aliases = {pseudonym(name, SECRET) for name in ("0", "id", "softmax", "ann")}
    assert {f["student"] for f in hidden["feedback"]} == aliases == set(hidden["misconceptions"][0]["names"])
    assert [f["score"] for f in hidden["feedback"]] == [15] * 4
    for entry in hidden["feedback"]:
        assert "/home/student-" in entry["text"] and "softmax [softmax-wrong-dim]" in entry["text"]
    assert json.loads(render(hidden, "json"))["students"] == 4


def test_the_page_links_each_student_to_their_own_feedback_whatever_their_names():
    """Anchors made from names alone collided (``a b`` and ``a_20b`` both ``s-a_20b``; ``Ab`` and ``ab``
    where a tool folds case): a link opened another student's feedback."""
    from grader.reporting.class_page import page, students_page

    names = ("a b", "a_20b", "a_b", "Ab", "ab", "<i>x</i>")
    summary = summarise([_result(name, [("a", 0, 10, "failed", ())]) for name in names])
    for report, companion in ((page(summary), None), (page(summary, "each.html"), students_page(summary))):
        links, targets = _links_and_targets(report)[0], _links_and_targets(companion or report)[1]
        assert len(targets) == len(names) and len({t.lower() for t in targets}) == len(names)
        helped = [(href, text) for href, text in links if text in names]
        assert {text for _, text in helped} == set(names)  # each in "Who needs help" (and "The run"), linked
        for href, text in helped:
            where, _, anchor = href.partition("#")
            assert where == ("each.html" if companion else "")
            assert targets[anchor].startswith(f"{text}: 0/10")  # the feedback it opens is that student's


def _links_and_targets(page: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """A page's links (href, text) and its students' feedback (id: its summary's text), as a browser reads them."""
    import re
    from html import unescape

    links = [(unescape(href), unescape(text)) for href, text in re.findall(r'<a href="([^"]*)">([^<]*)</a>', page)]
    targets = re.findall(r'<details id="([^"]*)"><summary>([^<]*)</summary>', page)
    assert len({unescape(anchor) for anchor, _ in targets}) == len(targets), "an id given twice"
    return links, {unescape(anchor): unescape(text) for anchor, text in targets}


def test_the_class_report_csv_takes_no_text_for_a_formula():
    summary = summarise([_result("ann", [("=cmd|' /C calc'!A0", 0, 10, "failed", ("-2+3",))])])
    rows = list(csv.reader(io.StringIO(render(summary, "csv"))))
    assert [row[1] for row in rows[1:]] == ["'=cmd|' /C calc'!A0"] * 2 and rows[2][2] == "'-2+3"
    assert rows[1][4] == "10" and rows[2][4] == "10"  # numbers stay numbers


def test_pseudonyms_are_keyed_by_the_courses_secret_kept_in_the_course_folder(tmp_path):
    from grader.reporting.class_report import SECRET_FILE, course_secret

    one, other = tmp_path / "one", tmp_path / "other"
    one.mkdir()
    other.mkdir()
    secret = course_secret(one)
    assert len(secret) == 32 and course_secret(one) == secret != course_secret(other)
    assert (one / SECRET_FILE).stat().st_mode & 0o777 == 0o600
    assert pseudonym("dora", secret) == pseudonym("dora", course_secret(one)) != pseudonym("dora", course_secret(other))
    import hashlib

    unkeyed = hashlib.sha256(b"grade-report:dora").hexdigest()  # what a roster recomputed before
    assert unkeyed[:8] not in pseudonym("dora", secret) and pseudonym("dora", secret).startswith("student-")


def test_a_secret_that_cannot_be_kept_is_one_line_not_an_unkeyed_pseudonym(tmp_path):
    from grader.reporting.class_report import SECRET_FILE, course_secret
    from grader.errors import CourseSecretError, GraderError

    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(CourseSecretError) as raised:
        course_secret(tmp_path / "file")  # a course folder nothing can be made in
    assert issubclass(CourseSecretError, GraderError) and "\n" not in str(raised.value)
    assert SECRET_FILE in str(raised.value) and "cannot be read or made" in str(raised.value)
    (tmp_path / SECRET_FILE).write_text("short\n")
    with pytest.raises(CourseSecretError, match="64 hex digits"):
        course_secret(tmp_path)
    (tmp_path / SECRET_FILE).write_text(bytes(range(32)).hex() + "\n")
    (tmp_path / SECRET_FILE).chmod(0o644)  # copied with the folder, readable by all (red team round 30b)
    with pytest.raises(CourseSecretError, match="can be read by others .*chmod 600"):
        course_secret(tmp_path)
    (tmp_path / SECRET_FILE).chmod(0o640)  # a staff group may read it
    assert course_secret(tmp_path) == bytes(range(32))


def _course(root: Path, results: list[dict]) -> Path:
    """A course folder (course.toml) holding a results folder that grade autograde could have written."""
    import shutil

    from grader.reporting.course_secret import course_secret
    from grader.reporting.result_folder import write_manifest

    (root / "grades").mkdir(parents=True)
    shutil.copy(ROOT / "course.toml", root)
    (root / "suites" / "lesson").mkdir(parents=True)
    for name in ("misconceptions.toml", "figures.py"):
        shutil.copy(ROOT / "suites" / "lesson" / name, root / "suites" / "lesson")
    texts = {f"r{index}": json.dumps(data) for index, data in enumerate(results)}
    for stem, text in texts.items():
        (root / "grades" / f"{stem}.json").write_text(text)
    write_manifest(root / "grades", texts, secret=course_secret(root))
    return root


def test_grade_report_anonymise_is_stable_for_a_course_differs_between_courses_and_never_prints_its_secret(
        tmp_path, capsys):
    from grader.api import report
    from grader.reporting.class_report import SECRET_FILE
    from grader.config import load_course

    results = [_result(name, [("a", 0, 10, "failed", ())]) for name in ("0", "id", "ann")]
    seen = []
    for root in (tmp_path / "one", tmp_path / "one", tmp_path / "other"):
        if not root.exists():
            _course(root, results)
        assert report(course=load_course(root), result_dirs=(root / "grades",), out=None, fmt="json",
                      anonymise=True) == 0
        said = capsys.readouterr()
        assert (root / SECRET_FILE).read_text().strip() not in said.out + said.err
        seen.append(sorted(f["student"] for f in json.loads(said.out)["feedback"]))
    assert seen[0] == seen[1] and not set(seen[0]) & set(seen[2])
    assert all(name.startswith("student-") for name in seen[0])


def test_grade_report_anonymise_says_in_one_line_when_the_secret_cannot_be_kept(tmp_path):
    import subprocess

    from grader.reporting.class_report import SECRET_FILE

    root = _course(tmp_path / "course", [_result("zelda-xq", [("a", 0, 10, "failed", ())])])
    (root / SECRET_FILE).unlink()
    (root / SECRET_FILE).mkdir()  # unreadable as a secret, even to root
    done = subprocess.run([sys.executable, "-m", "grader", "report", "grades", "--anonymise", "--format", "json"],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "--anonymise" in done.stderr and "zelda-xq" not in done.stderr



# --- the page at a glance (issue 35) ---------------------------------------------------------------------
def _a_class() -> list:
    """Six students' results as grade check made them: three at 100/100, one at 95, one with a passed
    exercise's "right, given your softmax" note and a misconception, one who handed in nothing."""
    from grader.results import AssignmentResult, CheckOutcome, ExerciseResult, SubmissionResult

    def student(name, exercises):
        return SubmissionResult(name, 3, "cpu", 1.0, [AssignmentResult("01_attention_basics", "Basics", exercises)])

    def passed(name, points, message=""):
        return ExerciseResult(name, points, [CheckOutcome(f"{name}_random", 1, "passed", message)])

    def failed(name, points, earned, *ids):
        return ExerciseResult(name, points, [CheckOutcome(f"{name}_random", earned, "passed"),
                                             CheckOutcome(f"{name}_large", 1 - earned, "failed", "NaN at 4 entries", ids)])

    def stub(name, points):
        return ExerciseResult(name, points, [CheckOutcome(f"{name}_random", 1, "not_implemented", "not attempted yet")])

    note = "right, given your softmax, which this uses; but your softmax is wrong (see softmax, above)"
    return [*(student(name, [passed("softmax", 50), passed("attention_weights", 50)]) for name in ("ann", "bea", "cyd")),
            student("dee", [failed("softmax", 50, 0.9, "softmax-unstable"), passed("attention_weights", 50)]),
            student("eve", [failed("softmax", 50, 0.5, "softmax-unstable"), passed("attention_weights", 50, note)]),
            student("fin", [stub("softmax", 50), stub("attention_weights", 50)])]


def test_the_histogram_labels_each_bar_by_its_range_and_full_marks_stand_alone():
    """The three 100/100 students stood under "90" (each bar labelled by its start, full marks in the
    last tenth): now each bar is a range, "90–99", and full marks a bar of their own, "100"."""
    summary = summarise([r.to_json() for r in _a_class()])
    (assignment,) = summary["assignments"]
    assert assignment["bins"] == [f"{10 * i}–{10 * i + 9}" for i in range(10)] + ["100"]
    assert assignment["histogram"] == [1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 3]  # fin 0, eve 75, dee 95, three at 100
    page = render(summary, "html")
    assert 'data-label="100" data-value="3"' in page and 'data-label="90–99" data-value="1"' in page
    assert ">100</text>" in page and ">90–99</text>" in page
    from grader.reporting.class_report import bin_labels

    assert bin_labels(30)[-2:] == ["27–29", "30"] and bin_labels(25)[:2] == ["0–<2.5", "2.5–<5"]


def test_points_not_attempted_are_kept_apart_from_points_lost_to_mistakes():
    """The student who handed in nothing counted as 100 points lost, beside the others' real mistakes:
    now points not attempted are a column, a CSV field and a bar of their own."""
    summary = summarise([r.to_json() for r in _a_class()])
    softmax, weights = summary["assignments"][0]["exercises"]
    assert (softmax["points_lost"], softmax["points_not_attempted"]) == (30, 50)  # dee 5, eve 25; fin 50
    assert (weights["points_lost"], weights["points_not_attempted"]) == (0, 50)
    assert summary["assignments"][0]["counts"]["not_attempted"] == 1
    assert [(m["id"], m["points_lost"]) for m in summary["misconceptions"]] == [("softmax-unstable", 30)]
    rows = list(csv.DictReader(io.StringIO(render(summary, "csv"))))
    assert [(r["exercise"], r["points_lost"], r["points_not_attempted"]) for r in rows if not r["misconception"]] \
        == [("softmax", "30", "50"), ("attention_weights", "0", "50")]
    assert "| 01_attention_basics:softmax | 30 | 50 |" in render(summary, "markdown")
    page = render(summary, "html")
    assert "<th class=\"n\">points lost to mistakes</th><th class=\"n\">points not attempted</th>" in page
    assert 'data-label="softmax" data-kind="hot" data-value="30"' in page
    assert 'data-label="softmax" data-kind="idle" data-value="50"' in page


def test_each_students_feedback_on_the_page_is_what_grade_check_printed():
    """grade report rebuilt each student's table from JSON without the "right, given your ..." notes
    (and with each traceback whole where grade check pointed to it above): now the very same text."""
    from html import escape

    from grader.reporting.formats import render as render_result

    results = _a_class()
    summary = summarise([r.to_json() for r in results])
    page = render(summary, "html")
    for result in results:
        printed = render_result(result, "table")
        assert next(f["text"] for f in summary["feedback"] if f["student"] == result.submission) == printed
        assert f"<pre>{escape(printed)}</pre>" in page
    assert "right, given your softmax" in next(f["text"] for f in summary["feedback"] if f["student"] == "eve")


@pytest.mark.slow
def test_the_page_in_a_real_browser_shows_ranges_labels_at_body_size_not_attempted_apart_and_grade_checks_text(
        tmp_path):
    """Issue 35, in Debian's Chromium: the histogram's labels as drawn are the ranges and "100" stands
    under the three at full marks; every chart's text, the misconceptions' labels first, is drawn at the
    body's font size (the chart unscaled); the points missed are two bars, lost to mistakes and not
    attempted; each student's feedback, as the browser shows it, is what grade check printed."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    from grader.reporting.formats import render as render_result

    results = _a_class()
    summary = summarise([r.to_json() for r in results])
    path = tmp_path / "report.html"
    path.write_text(render(summary, "html"), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(path.as_uri())
            body = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
            sizes = page.eval_on_selector_all(
                "svg.chart text", "els => els.map(e => [e.closest('svg').id, e.textContent, "
                                  "parseFloat(getComputedStyle(e).fontSize) * e.getScreenCTM().a])")
            under = page.eval_on_selector_all(  # each bar's number, and the text drawn below it
                "svg#hist-01_attention_basics rect.bar",
                "els => els.map(e => { const b = e.getBBox(), x = b.x + b.width / 2; const t = [...e.ownerSVGElement"
                ".querySelectorAll('text')].filter(t => Math.abs(t.getBBox().x + t.getBBox().width / 2 - x) < 1 && "
                "t.getBBox().y > b.y + b.height); return [parseFloat(e.dataset.value), t.map(t => t.textContent)]; })")
            missed = page.eval_on_selector_all(
                "svg#missed-01_attention_basics rect.bar",
                "els => els.map(e => [e.dataset.label, e.dataset.kind, parseFloat(e.dataset.value), "
                "getComputedStyle(e).fill, e.getBBox().width])")
            shown = page.eval_on_selector_all("details pre", "els => els.map(e => e.textContent)")
        finally:
            browser.close()
    labels = [(text, size) for where, text, size in sizes if where == "misconceptions"]
    assert labels and ("softmax-unstable", body) in labels
    assert all(size == pytest.approx(body) for _, _, size in sizes), (body, sizes)
    assert under == [[value, [label]] for value, label in zip(summary["assignments"][0]["histogram"],
                                                                summary["assignments"][0]["bins"])]
    assert under[-1] == [3, ["100"]] and under[-2] == [1, ["90–99"]]
    assert [(label, kind, value) for label, kind, value, _, _ in missed] == [
        ("softmax", "hot", 30), ("softmax", "idle", 50), ("attention_weights", "hot", 0), ("attention_weights", "idle", 50)]
    assert len({fill for _, _, _, fill, _ in missed}) == 2 and all(w > 0 for *_, v, _, w in missed if v)
    assert shown == [render_result(r, "table") for r in sorted(results, key=lambda r: r.submission)]


def _class_with_figures():
    """Four hand-made results of 02_self_attention: alice and bob take the softmax over the queries (the same
    output), carol over the keys but unscaled, dave's mistake has no figure."""
    import torch

    from grader.config import load_course
    from grader.grading.pictures import course_pictures, figure_of

    case = course_pictures(load_course(ROOT))[("02_self_attention", "attention_weights")]
    queries, keys = case.inputs()
    scores = queries @ keys.T
    right = torch.softmax(scores / 2 ** 0.5, dim=-1)
    drawn = {"alice": torch.softmax(scores / 2 ** 0.5, dim=0), "bob": torch.softmax(scores / 2 ** 0.5, dim=0),
             "carol": torch.softmax(scores, dim=-1)}
    results = []
    for name, named in (("alice", "softmax-wrong-dim"), ("bob", "softmax-wrong-dim"), ("carol", "missing-scale"),
                        ("dave", "softmax-wrong-dim")):
        data = _result(name, [("attention_weights", 5, 20, "failed", [named])], "02_self_attention")
        if name in drawn:
            data["assignments"][0]["exercises"][0]["figure"] = figure_of(case, drawn[name], right,
                                                                         rtol=1e-4, atol=1e-5)
        results.append(data)
    return results


def test_the_report_draws_each_misconception_as_a_typical_students_weights_beside_the_right_ones():
    """Issue 36: the most common output of those named with it (the first by name on a tie), labelled
    with the lesson's tokens; each cell's number is the JSON's."""
    results = _class_with_figures()
    summary = summarise(results)
    by_id = {m["id"]: m for m in summary["misconceptions"]}
    wrong_dim, unscaled = by_id["softmax-wrong-dim"]["figure"], by_id["missing-scale"]["figure"]
    assert (wrong_dim["student"], wrong_dim["students_alike"], wrong_dim["exercise"]) == (
        "alice", 2, "02_self_attention:attention_weights")
    assert wrong_dim["theirs"] == results[0]["assignments"][0]["exercises"][0]["figure"]["theirs"]
    assert unscaled["student"] == "carol" and unscaled["right"] == wrong_dim["right"]
    page = render(summary, "html")
    for ident, figure in (("softmax-wrong-dim", wrong_dim), ("missing-scale", unscaled)):
        start = page.index(f'<svg id="figure-{ident}"')
        drawn = page[start:page.index("</svg>", start)]
        for word in figure["row_labels"]:
            assert f">{word}</text>" in drawn
        for key in ("theirs", "right", "differs"):
            for i, row in enumerate(figure[key]):
                for j, value in enumerate(row):
                    assert f'data-panel="{key}" data-row="{i}" data-col="{j}" data-value="{value}"' in drawn
    assert "alice&#x27;s 02_self_attention:attention_weights (1 more gave the same)" in page
    assert "figure" not in json.dumps(summarise([results[3]])["misconceptions"])  # dave's has none: none drawn
    assert json.loads(render(summary, "json"))["misconceptions"] == summary["misconceptions"]


@pytest.mark.slow
def test_the_misconception_figures_render_in_a_real_browser_labelled_and_as_the_json_says(tmp_path):
    summary = summarise(_class_with_figures())
    path = tmp_path / "report.html"
    path.write_text(render(summary, "html"), encoding="utf-8")
    drawn = {}

    def read(page):
        for m in summary["misconceptions"]:
            drawn[m["id"]] = page.eval_on_selector_all(
                f"svg#figure-{m['id']} rect.cell",
                "els => els.map(e => [e.dataset.panel, +e.dataset.row, +e.dataset.col, e.dataset.value, "
                "e.getBBox().width, e.getBBox().height, getComputedStyle(e).fill])")
            drawn[m["id"] + " labels"] = page.eval_on_selector_all(
                f"svg#figure-{m['id']} text", "els => els.map(e => [e.textContent, e.getBBox().width])")
            drawn[m["id"] + " title"] = page.eval_on_selector(f"svg#figure-{m['id']} title", "e => e.textContent")

    assert _in_chromium(path, read) == []  # no console error
    for m in summary["misconceptions"]:
        figure = m["figure"]
        cells = drawn[m["id"]]
        assert len(cells) == 3 * 36 and all(w > 0 and h > 0 for *_, w, h, _ in cells)
        for key in ("theirs", "right", "differs"):
            assert {(i, j): v for k, i, j, v, *_ in cells if k == key} == {
                (i, j): str(v) for i, row in enumerate(figure[key]) for j, v in enumerate(row)}
        differs = {fill for k, i, j, v, *_, fill in cells if k == "differs" and v == "1"}
        agrees = {fill for k, i, j, v, *_, fill in cells if k == "differs" and v == "0"}
        assert differs and (not agrees or differs.isdisjoint(agrees))
        labels = dict(drawn[m["id"] + " labels"])
        assert all(labels.get(word, 0) > 0 for word in figure["row_labels"] + ["yours", "right"])
        assert drawn[m["id"] + " title"] == figure["title"]


# --- issue 45: --anonymise hides a name in every text of a result; the run header counts what ran ------------
# a class whose every name can reach a text: corrupt zips (one a name cleaning changes), a folder with no
# module, a notebook named after its student that no grader reads, a folder and a zip whose names clean to one
# (a collision), and a right answer in a module named after its student (the file it was graded from)
LEAKY = ("xavier_quill", "ignatz~park", "ignatz_park", "yolanda_rook", "wrenna_hale", "umberto_vance", "quinn_moss")


def _leaky_class(root: Path) -> None:
    for zipped in ("xavier_quill.zip", "ignatz~park.zip", "umberto_vance.zip"):
        (root / zipped).parent.mkdir(parents=True, exist_ok=True)
        (root / zipped).write_text("not a zip")
    (root / "yolanda_rook").mkdir()
    (root / "yolanda_rook" / "notes.txt").write_text("I could not finish")
    (root / "wrenna_hale").mkdir()
    (root / "wrenna_hale" / "wrenna_hale_attention_basics.ipynb").write_text('{"cells": [')
    (root / "umberto_vance").mkdir()
    (root / "umberto_vance" / "README.md").write_text("see the zip")
    (root / "quinn_moss").mkdir()
    (root / "quinn_moss" / "quinn_moss_attention_basics.py").write_text(MODULE.read_text())


def test_anonymise_hides_every_name_in_every_text_of_a_class_as_lmses_hand_it_out(course, tmp_path):
    """Issue 45: the feedback of unreadable submissions leaked their names ("jo.zip is not a valid .zip
    file", a path ending in the student's folder), and what grade check showed carried them into the page."""
    from grader.batch.autograde import autograde
    from grader.reporting.class_page import page, students_page

    _leaky_class(tmp_path / "class")
    out = tmp_path / "results"
    autograde(course=course, paths=[tmp_path / "class"], out=out, workers=1, shard=None, resume=False,
              device="cpu", seed=3, assignments=(course.assignment("01_attention_basics"),))
    results = _results(out)
    plain = json.dumps(results)
    assert all(name in plain for name in ("xavier_quill.zip", "ignatz~park.zip", "yolanda_rook", "wrenna_hale_",
                                          "umberto_vance.zip", "quinn_moss"))  # each name reached some text
    hidden = summarise(results, secret=SECRET)
    shown = (render(hidden, "json") + render(hidden, "csv") + render(hidden, "markdown") + page(hidden)
             + page(hidden, "each.html") + students_page(hidden))
    for name in LEAKY:
        for part in name.replace("~", "_").split("_"):
            assert part not in shown.lower(), (part, [line for line in shown.splitlines() if part in line.lower()])
    aliases = {result["submission"]: pseudonym(result["submission"], SECRET) for result in results}
    assert {entry["student"] for entry in hidden["feedback"]} == set(aliases.values())
    texts = {entry["student"]: entry["text"] for entry in hidden["feedback"]}
    assert f"{aliases['xavier_quill']}.zip is not a valid .zip file" in texts[aliases["xavier_quill"]]
    assert f"{aliases['ignatz_park']}.zip is not a valid .zip file" in texts[aliases["ignatz_park"]]
    assert hidden["assignments"] == summarise(results)["assignments"]  # the numbers are the same


def test_a_name_is_hidden_in_its_raw_and_cleaned_forms_and_nothing_else_is_touched():
    from grader.reporting.class_report import name_pattern

    def hide(name, text, collision=None):
        data = {"name_collision": collision} if collision else {}
        return name_pattern(data, name).sub("S", text)

    assert hide("jo_smith", "jo~smith.zip; /c/jo_smith/x.py; jo\\smith; jo_smith_week1.ipynb") == \
        "S.zip; /c/S/x.py; S; S_week1.ipynb"
    assert hide("caf_xe9", "caf\\xe9.zip is not valid; /c/caf\\udce9/a.py") == "S.zip is not valid; /c/S/a.py"
    assert hide("_.hidden", ".hidden.zip, _.hidden") == "S.zip, S"
    assert hide("bob~collided-0123456789abcdef", "bob.zip is bad; /t/bob~collided-0123456789abcdef/a",
                {"name": "bob", "raw": "bob.zip", "others": ["bob"]}) == "S is bad; /t/S/a"
    assert hide("jo", "john, major, jo-ann, softmax-wrong-jo, 1.jo") == "john, major, jo-ann, softmax-wrong-jo, 1.jo"
    assert hide("0", "dim=0 in 1.0, (2, 0)") == "dim=S in 1.0, (2, S)"
    assert hide("_", "a_b, _") == "a_b, S" and name_pattern({}, " ") is None


def test_the_run_header_counts_only_submissions_that_ran_and_help_says_why_one_was_not_graded(course):
    """Issue 45: a zip that never ran added "same-user" (its placeholder) to the run's isolation, and was told
    apart from a 0 nowhere: its points counted as lost to mistakes, and help said "0 points"."""
    from grader.batch.autograde import failed_result

    week = (course.assignment("01_attention_basics"),)
    ran = _result("ann", [("softmax", 0, 25, "failed", ())]) | {"isolation": "separate-user", "device": "cuda",
                                                                "duration_s": 4.0}
    unread = failed_result(week, "jo", "error", "jo.zip is not a valid .zip file (BadZipFile)", 1).to_json()
    crashed = failed_result(week, "kim", "crashed", "grading this submission crashed the grader twice", 1).to_json()
    summary = summarise([ran, unread, crashed])
    assert summary["run"]["isolation"] == ["separate-user"] and summary["run"]["devices"] == ["cuda"]
    assert summary["run"]["median_duration_s"] == 4.0 and summary["run"]["seeds"] == [1]
    helped = {row["student"]: row["what"] for row in summary["help"]}
    assert helped["jo"] == "not graded, its submission could not be read: jo.zip is not a valid .zip file (BadZipFile)"
    assert helped["kim"].startswith("0 points") and helped["ann"] == "0 points"
    (assignment,) = summary["assignments"]
    lost = {e["name"]: e["points_lost"] for e in assignment["exercises"]}
    assert lost["softmax"] == 25 + 25  # ann's mistake and kim's crash; jo's corrupt zip lost nothing
    # kim's crash is an error among the graded; jo's corrupt zip is counted apart, in no median, histogram or
    # mean (a newcomer's report showed unreadable submissions as 0/100 where the exports left them empty)
    assert assignment["counts"]["error"] == 1 and assignment["counts"]["zero"] == 1  # kim; ann
    assert assignment["students"] == 2 and assignment["not_graded"] == 1 and sum(assignment["histogram"]) == 2
