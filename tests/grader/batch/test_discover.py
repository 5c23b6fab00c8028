"""Finding a class's submissions (grader/batch/discover.py): every malformed one is an error job with one line
of reason, never an exception that stops the batch; names are safe and unique."""
import json
import os
import shutil
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from grader.batch.discover import MAX_MEMBERS, ZIP_LIMIT, discover, safe_name

ROOT = Path(__file__).resolve().parents[3]
SOLUTION = ROOT / "solutions" / "01_attention_basics" / "attention_basics.py"


def good_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(SOLUTION, "01_attention_basics/attention_basics.py")
    return path


def patched_method(path: Path, method: int) -> Path:
    """A zip whose member claims compression ``method`` in both its headers."""
    good_zip(path)
    data = bytearray(path.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<H", data, local + 8, method)
    struct.pack_into("<H", data, central + 10, method)
    path.write_bytes(bytes(data))
    return path


def encrypted(path: Path) -> Path:
    good_zip(path)
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        flags = struct.unpack_from("<H", data, at + offset)[0]
        struct.pack_into("<H", data, at + offset, flags | 0x1)
    path.write_bytes(bytes(data))
    return path


def with_members(path: Path, *members) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            archive.writestr(info, data)
    return path


def link_member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def bomb(path: Path) -> Path:
    """Declares a small size, inflates past ZIP_LIMIT."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("01_attention_basics/attention_basics.py", b"\0" * (ZIP_LIMIT + (1 << 20)))
    data = bytearray(path.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, 10)
    struct.pack_into("<I", data, central + 24, 10)
    path.write_bytes(bytes(data))
    return path


MALFORMED = {
    "dotdot": (lambda p: with_members(p, ("../../escaped.py", "x = 1")), "points outside"),
    "absolute": (lambda p: with_members(p, ("/tmp/escaped.py", "x = 1")), "points outside"),
    "encrypted": (encrypted, "encrypted"),
    "method": (lambda p: patched_method(p, 99), "compression"),
    "long": (lambda p: with_members(p, ("a" * 300 + ".py", "x = 1")), "too long"),
    "garbage": (lambda p: p.write_bytes(b"this is not a zip file at all") or p, "not a valid .zip"),
    "bomb": (bomb, ""),
    "link": (lambda p: with_members(p, (link_member("01_attention_basics/attention_basics.py"),
                                        str(SOLUTION))), "symbolic link"),
    "twice": (lambda p: with_members(p, ("01_attention_basics/a.py", "x = 1"), ("01_attention_basics/a.py", "y = 2")),
              "twice"),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_archive_is_an_error_job_with_a_reason(course, tmp_path, kind):
    import warnings

    make, reason = MALFORMED[kind]
    folder = tmp_path / "class"
    folder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        make(folder / f"{kind}.zip")
    shutil.copytree(ROOT / "solutions", folder / "alice", ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "scratch")}
    assert set(jobs) == {kind, "alice"}
    assert jobs["alice"].error is None and jobs["alice"].path.is_dir()
    bad = jobs[kind]
    assert bad.path is None and bad.error and "\n" not in bad.error and reason in bad.error, bad.error
    assert not (tmp_path / "escaped.py").exists() and not Path("/tmp/escaped.py").exists()
    unpacked = sum(f.stat().st_size for f in (tmp_path / "scratch").rglob("*") if f.is_file())
    assert unpacked <= ZIP_LIMIT


def test_too_many_members_is_an_error(course, tmp_path):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for index in range(MAX_MEMBERS + 1):
            archive.writestr(f"f{index}", b"")
    (job,) = discover([path], course, tmp_path / "scratch")
    assert job.error and "more than" in job.error


def test_names_are_safe_unique_and_stable(course, tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    good_zip(folder / "bob.zip")
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / "bob" / "01_attention_basics")
    good_zip(folder / "..zip")
    odd = os.fsdecode(b"caf\xe9")  # a folder name that is not UTF-8
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / odd / "01_attention_basics")
    jobs = discover([folder], course, tmp_path / "scratch")
    names = [job.name for job in jobs]
    bobs = [name for name in names if name.startswith("bob~collided-")]  # bob/ and bob.zip: neither is bob
    assert sorted(names) == sorted([*bobs, "_.", "caf_xe9"]) and len(set(bobs)) == 2, names
    assert all(job.error is None for job in jobs)
    for name in names:
        name.encode("utf-8")  # a file name and a CSV cell in any report
        assert "/" not in name and not name.startswith(".")
    assert [job.name for job in discover([folder], course, tmp_path / "again")] == names  # the same each run
    assert safe_name(Path("x/.hidden.zip")) == "_.hidden" and safe_name(Path("x\x07y")) == "x_y"


def test_a_student_folder_named_like_an_assignment_is_one_student_of_the_class(course, tmp_path):
    """Red team (issue 33): a submission folder named ``01_attention_basics`` made its class folder one
    submission ("class: 0/100"), and alice and bob got no result."""
    folder = tmp_path / "class"
    for name in ("alice", "bob"):
        shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / name / "01_attention_basics")
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / "01_attention_basics")
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "scratch")}
    assert set(jobs) == {"alice", "bob", "01_attention_basics"} and all(j.error is None for j in jobs.values())
    one = tmp_path / "one"  # a submission shaped like assignments/ is still one submission
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", one / "01_attention_basics")
    (one / "notes").mkdir()
    assert [job.name for job in discover([one], course, tmp_path / "scratch2")] == ["one"]


def test_names_that_reorder_or_hide_text_are_shown_as_what_they_are():
    """Red team (issue 33): a right-to-left override in a name reversed the score after it in the class
    page; a zero-width space made ``al\u200bice`` look like ``alice``."""
    from grader.results import plain_text

    assert safe_name(Path("al\u200bice")) == "al_ice" and safe_name(Path("mallory \u202e")) == "mallory _"
    assert plain_text("boom \u202e001/001", 100) == "boom <U+202E>001/001"


def test_a_link_in_the_class_folder_is_an_error_not_followed(course, tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "mallory").symlink_to(ROOT / "solutions")
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / "alice" / "01_attention_basics")
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "scratch")}
    assert jobs["mallory"].path is None and "symbolic link" in jobs["mallory"].error
    assert jobs["alice"].error is None


def test_a_long_name_is_cut_to_fit_a_result_file_and_its_temporary(course, tmp_path):
    from grader.batch.discover import COLLIDED, NAME_BYTES
    from grader.reporting.result_folder import write_atomically

    folder = tmp_path / "class"
    folder.mkdir()
    long = "\N{GRINNING FACE}" * 62  # 248 bytes: its name plus ".json" would not fit in 255
    good_zip(folder / f"{long}.zip")
    (folder / f"{long}a.zip").write_bytes(b"garbage")  # the same name once cut: unique all the same
    jobs = discover([folder], course, tmp_path / "scratch")
    assert len({job.name for job in jobs}) == 2
    for job in jobs:
        assert len(job.name.encode("utf-8")) <= NAME_BYTES + len(COLLIDED) + 16  # both flagged (issue 44)
        write_atomically(tmp_path / f"{job.name}.json", "{}")  # ".<name>.json.XXXXXXXX" fits too
    assert {job.collision["raw"]: job.error is None for job in jobs} == {f"{long}.zip": True, f"{long}a.zip": False}


def test_a_folder_that_cannot_be_read_is_an_error_job(course, tmp_path, monkeypatch):
    """As root every folder is readable: the refusal is played by _is_submission."""
    import grader.batch.discover

    folder = tmp_path / "class"
    (folder / "locked" / "01_attention_basics").mkdir(parents=True)
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / "alice" / "01_attention_basics")
    real = grader.batch.discover._is_submission

    def refusing(path, course):
        if path.name == "locked":
            raise PermissionError(13, "Permission denied")
        return real(path, course)

    monkeypatch.setattr(grader.batch.discover, "_is_submission", refusing)
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "scratch")}
    assert jobs["locked"].path is None and jobs["locked"].error == "locked cannot be read (Permission denied)"
    assert jobs["alice"].error is None


@pytest.mark.slow
def test_malformed_submissions_get_error_results_and_alice_her_marks(course, tmp_path, capsys):
    import csv
    import warnings

    from grader.batch.autograde import autograde

    folder = tmp_path / "class"
    folder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name
        for kind, (make, _) in MALFORMED.items():
            make(folder / f"{kind}.zip")
    good_zip(folder / "..zip")
    (folder / os.fsdecode(b"caf\xe9.zip")).write_bytes(b"\xff" * 64)  # a name that is not UTF-8
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / "alice" / "01_attention_basics")
    out = tmp_path / "results"
    assert autograde(course=course, paths=[folder], out=out, workers=1, shard=None, resume=False,
                     device="cpu", seed=3) == 0
    assert "Traceback" not in capsys.readouterr().err
    results = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    broken = [*MALFORMED, "caf_xe9"]
    assert set(results) == {*broken, "_.", "alice"}
    alice = results["alice"]["assignments"][0]
    assert alice["score"] == alice["max_score"]
    for kind in broken:
        assert results[kind]["score"] == 0 and results[kind]["submission"] == kind
        assert {e["status"] for a in results[kind]["assignments"] for e in a["exercises"]} == {"error"}
    rows = list(csv.reader((out / "summary.csv").open(encoding="utf-8", newline="")))
    status = {row[0]: row[-1] for row in rows[1:]}
    assert rows[0][-1] == "status" and status.pop("alice") == "graded" and status.pop("_.") == "graded"
    assert status == {kind: "error" for kind in broken}


def test_two_names_that_clean_to_one_are_both_flagged_and_neither_takes_it(course, tmp_path):
    """Issue 44: ``jane\\doe`` cleaned to ``jane_doe`` and sorted first took the real jane_doe's name (her
    result went by ``jane_doe~2``), so a stub's 0 replaced her 600 in summary.csv and the exports."""
    folder = tmp_path / "class"
    for name in ("jane\\doe", "jane_doe", "jane\x01doe", "alice"):
        shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / name / "01_attention_basics")
    good_zip(folder / "jane~doe.zip")  # "~" is the grader's mark: no name holds one
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "scratch")}
    assert "jane_doe" not in jobs and jobs["alice"].collision is None  # a name alone keeps itself
    collided = {job.collision["raw"]: job for job in jobs.values() if job.collision}
    assert set(collided) == {"jane\\doe", "jane_doe", "jane\x01doe", "jane~doe.zip"}
    for raw, job in collided.items():
        assert job.name.startswith("jane_doe~collided-") and job.error is None
        assert job.collision["name"] == "jane_doe" and sorted([raw, *job.collision["others"]]) == sorted(collided)
    assert len({job.name for job in collided.values()}) == 4  # distinct
    again = {job.name for job in discover([folder], course, tmp_path / "again")}
    assert again == set(jobs)  # stable from run to run
    (folder / "jane\x01doe").rename(tmp_path / "gone")  # its own name does not depend on the others'
    assert {job.name for job in discover([folder], course, tmp_path / "third")} == set(jobs) - {
        collided["jane\x01doe"].name}
    assert safe_name(Path("a~2")) == "a_2"


def test_names_a_gradebook_takes_for_one_are_both_flagged(course, tmp_path):
    """Red team round 20: ``bob`` and ``bob `` were graded as two students, two rows of the Canvas export with
    no word of a collision, where a gradebook trims a login (and takes its case as one)."""
    folder = tmp_path / "class"
    for name in ("bob", "bob ", "Bob", "alice"):
        shutil.copytree(ROOT / "solutions" / "01_attention_basics", folder / name / "01_attention_basics")
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "scratch")}
    assert jobs["alice"].collision is None and not {"bob", "bob ", "Bob"} & set(jobs)
    collided = {job.collision["raw"]: job for job in jobs.values() if job.collision}
    assert set(collided) == {"bob", "bob ", "Bob"} and len({job.name for job in collided.values()}) == 3
    assert all(job.name.startswith(raw + "~collided-") for raw, job in collided.items())
    assert {job.collision["name"] for job in collided.values()} == {"Bob"}


def test_one_raw_name_in_two_folders_given_is_two_submissions_told_apart(course, tmp_path):
    for parent in ("one", "two"):
        shutil.copytree(ROOT / "solutions" / "01_attention_basics",
                        tmp_path / parent / "class" / "bob" / "01_attention_basics")
    jobs = discover([tmp_path / "one" / "class", tmp_path / "two" / "class"], course, tmp_path / "scratch")
    assert len({job.name for job in jobs}) == 2 and all(job.name.startswith("bob~collided-") for job in jobs)
    assert [job.collision["others"] for job in jobs] == [["bob"], ["bob"]]
