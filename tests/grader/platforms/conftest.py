"""Two small result folders (two shards of one class, one seed), as `grade autograde` leaves them, and
`grade export` run on them as an instructor runs it."""
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reporting"))  # test_export's helpers
from test_export import ASSIGNMENT, FORMULAS, result_file, unreadable_file  # noqa: E402

FORMULA = FORMULAS[0]  # a folder name a spreadsheet would run as a formula


@pytest.fixture
def shards(course, tmp_path, course_toml):
    """shard-1: zoe (100) and the formula-named submission (50); shard-2: yan (25), whose softmax the
    grader failed on (no valid score)."""
    import json

    from grader.config import load_course
    from grader.reporting.course_secret import course_secret
    from grader.reporting.result_folder import write_manifest

    root = course_toml(tmp_path / "course")
    copy = load_course(root)
    result_file(tmp_path / "shard-1", "zoe", copy, 100.0)
    result_file(tmp_path / "shard-1", FORMULA, copy, 50.0, stem="s1")
    result_file(tmp_path / "shard-2", "yan", copy, 25.0)
    failed = tmp_path / "shard-2" / "yan.json"
    data = json.loads(failed.read_text())
    data["assignments"][0]["exercises"][0]["status"] = "grader-error"
    failed.write_text(json.dumps(data))
    write_manifest(tmp_path / "shard-2", {"yan": json.dumps(data)}, secret=course_secret(root))
    return copy, [tmp_path / "shard-1", tmp_path / "shard-2"]


@pytest.fixture
def export(shards, tmp_path):
    """``grade export SHARDS --output out.csv *options``: (exit code, the CSV, stderr)."""
    return _exporting(*shards, tmp_path)


@pytest.fixture
def export_unread(course, tmp_path, course_toml):
    """``grade export`` (as ``export``) of a class of three: zoe (100), jo's corrupt zip (not graded: a
    result of status ``error``) and kim, whose code crashed the grader twice (a score of 0)."""
    from grader.config import load_course

    root = course_toml(tmp_path / "course")
    copy = load_course(root)
    folder = tmp_path / "class"
    result_file(folder, "zoe", copy, 100.0)
    unreadable_file(folder, "jo", copy, "jo.zip is not a valid .zip file (BadZipFile)")
    unreadable_file(folder, "kim", copy, "grading this submission crashed the grader twice", "crashed")
    return _exporting(copy, [folder], tmp_path)


@pytest.fixture
def export_named(course, tmp_path, course_toml):
    """``export_named(names, *options)``: ``grade export`` (as ``export``) of one results folder holding a
    result for each of ``names``, the i-th scored 10 * (i + 1) (each under a file name of its own)."""
    from grader.config import load_course

    root = course_toml(tmp_path / "course")
    copy = load_course(root)

    def run(names, *options):
        folder = tmp_path / "named"
        for index, name in enumerate(names):
            result_file(folder, name, copy, 10.0 * (index + 1), stem=f"r{index}")
        return _exporting(copy, [folder], tmp_path)(*options)

    run.title = copy.assignment(ASSIGNMENT).title
    return run


def _exporting(course, folders, tmp_path):
    from grader.cli import cli

    def run(*options):
        out = tmp_path / "out.csv"
        out.unlink(missing_ok=True)
        outcome = CliRunner().invoke(cli, ["--course", str(course.root), "export", *map(str, folders),
                                           "--output", str(out), *options])
        return outcome.exit_code, out.read_text(encoding="utf-8") if out.exists() else "", outcome.stderr

    run.title = course.assignment(ASSIGNMENT).title
    return run


@pytest.fixture
def roster(tmp_path):
    """A roster file: write(*rows), each a list of cells or a line of text -> its path."""
    import csv

    def write(*rows):
        path = tmp_path / "roster.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(row.split(",") if isinstance(row, str) else row for row in rows)
        return path
    return write
