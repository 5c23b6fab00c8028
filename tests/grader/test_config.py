import dataclasses
import shutil

import pytest

from grader.config import find_course_root, load_course
from grader.errors import ConfigError, UsageError

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def with_misconceptions(tmp_path):
    """The course's misconceptions file, where course.toml names it, beside a copy of course.toml."""
    (tmp_path / "suites" / "lesson").mkdir(parents=True, exist_ok=True)
    for name in ("misconceptions.toml", "figures.py"):
        shutil.copy(ROOT / "suites" / "lesson" / name, tmp_path / "suites" / "lesson")
    return tmp_path


def broken_course(tmp_path, old, new):
    text = (ROOT / "course.toml").read_text()
    assert old in text, old
    (tmp_path / "course.toml").write_text(text.replace(old, new, 1))
    return with_misconceptions(tmp_path)


def test_the_course_loads_with_100_points_per_assignment(course):
    assert [a.id for a in course.assignments] == [
        "01_attention_basics", "02_self_attention", "03_causal_attention",
        "04_multi_head_attention", "05_efficient_attention", "06_decoding_attention"]
    assert all(a.max_score == 100 for a in course.assignments)
    assert course.assignment("01_attention_basics").points_for("softmax") == 25
    assert course.tolerance("float64").rtol < course.tolerance("float32").rtol


def test_configuration_is_frozen(course):
    with pytest.raises(dataclasses.FrozenInstanceError):
        course.limits.memory_mb = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        course.assignments[0].id = "x"


@pytest.mark.parametrize("old,new,expected", [
    ("exercise_timeout_s = 10.0", "exercise_timout_s = 10.0", ":11: limits.exercise_timout_s: unknown key"),
    ("memory_mb = 6144", 'memory_mb = "lots"', ":13: limits.memory_mb: must be an integer, not a string"),
    ("SelfAttention_v2 = 15", 'SelfAttention_v2 = "x"', "assignments.1.points.SelfAttention_v2: must be a positive"),
    ('module = "self_attention.py"', 'module = "self_attention.txt"', "assignments.1.module: must be a file name"),
    ("[tolerances.float16]", "[tolerances.float8]", "tolerances.float8: unknown key"),
    ("[course]", "[coarse]", "coarse: unknown table"),
])
def test_a_wrong_key_or_type_names_the_key_file_and_line(tmp_path, old, new, expected):
    with pytest.raises(ConfigError) as error:
        load_course(broken_course(tmp_path, old, new))
    assert expected in str(error.value)
    assert str(tmp_path / "course.toml") in str(error.value)


# (table, key, default, another allowed value, the allowed values as the error lists them)
OPTIONAL_SETTINGS = [("isolation", "separate_user", "auto", "never", "'auto', 'never', 'required'"),
                     ("grading", "cascades", "once", "every", "'once', 'every'"),
                     ("gradescope", "visibility", "visible", "after_due_date",
                      "'visible', 'after_due_date', 'after_published', 'hidden'")]


@pytest.mark.parametrize("table,key,default,other,allowed", OPTIONAL_SETTINGS, ids=[t for t, *_ in OPTIONAL_SETTINGS])
def test_an_optional_table_has_its_default_and_its_values_checked(course, tmp_path, table, key, default, other,
                                                                  allowed):
    assert getattr(getattr(course, table), key) == default
    setting = f'{key} = "{default}"'
    broken_course(tmp_path, setting, f'{key} = "sometimes"')
    with pytest.raises(ConfigError, match=rf"{table}.{key}: must be one of {allowed}"):
        load_course(tmp_path)
    broken_course(tmp_path, setting, f'{key}s = "{other}"')
    with pytest.raises(ConfigError, match=rf"{table}.{key}s: unknown key"):
        load_course(tmp_path)
    broken_course(tmp_path, f"[{table}]\n{setting}\n", f'[{table}]\n{key} = "{other}"\n')
    assert getattr(getattr(load_course(tmp_path), table), key) == other
    broken_course(tmp_path, f"[{table}]\n{setting}\n", "")
    assert getattr(getattr(load_course(tmp_path), table), key) == default


def test_invalid_toml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_course(broken_course(tmp_path, "[course]", "[course"))


def test_the_course_root_is_found_from_a_subfolder(tmp_path):
    shutil.copy(ROOT / "course.toml", tmp_path / "course.toml")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_course_root(tmp_path / "a" / "b") == tmp_path.resolve()


def test_no_course_toml_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no course.toml"):
        find_course_root(tmp_path)


def test_an_unknown_assignment_is_a_usage_error(course):
    with pytest.raises(UsageError, match="unknown assignment '07_x'"):
        course.select(("07_x",))


@pytest.mark.parametrize("old, new, expected", [
    ('module = "attention_basics.py"', 'module = "attention_basic.py"',
     "assignments.0.module: no attention_basic.py in"),
    ("\nattention_scores = ", "\nattention_scoress = ",
     "assignments.0.points.attention_scoress: attention_basics.py defines no function or class"),
])
def test_a_module_or_exercise_the_reference_does_not_have_is_a_config_error(tmp_path, old, new, expected):
    """Issue 35, a newcomer's run: a misspelt module made `grade check` crash (FileNotFoundError, a
    traceback, exit 1); a misspelt exercise in points scored the solutions 100/105."""
    text = (ROOT / "course.toml").read_text()
    assert old in text
    (tmp_path / "course.toml").write_text(text.replace(old, new, 1))
    with_misconceptions(tmp_path)
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    with pytest.raises(ConfigError, match=expected):
        load_course(tmp_path)
    shutil.rmtree(tmp_path / "solutions")  # a student distribution: no reference to hold course.toml to
    load_course(tmp_path)
