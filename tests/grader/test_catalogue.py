"""The misconception catalogue: the spec's ids, each explained with a hint into the lessons; the course's
words in the course (suites/lesson/misconceptions.toml, named by course.toml), the generic ones in the
grader, and no id of this course's attention written in grader/."""
import ast
import json
import re
from pathlib import Path

import pytest

from grader.catalogue import GENERIC, lookup
from grader.config import load_course
from grader.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_course(ROOT).catalogue

# the course spec's "Misconception catalogue", in its order
SPEC_IDS = (
    "softmax-wrong-dim", "softmax-unstable", "missing-scale", "wrong-scale", "scores-transposed", "qkv-swapped",
    "values-not-used", "mask-not-applied", "mask-inverted", "mask-hides-diagonal",
    "mask-after-softmax-not-renormalized", "mask-not-truncated", "heads-split-without-transpose",
    "heads-merged-without-transpose", "view-on-non-contiguous", "out-proj-missing", "dropout-in-eval",
    "dropout-on-scores", "input-mutated", "wrong-device", "wrong-dtype", "forbidden-op", "not-vectorised",
    "kv-heads-tiled", "cache-not-used", "cache-position-not-advanced", "rope-pairs-interleaved",
    "window-off-by-one", "cache-not-reset", "rope-frequencies-wrong", "window-cache-too-small",
    "sum-without-keepdim", "mask-fill-finite",
)
DECODING_IDS = SPEC_IDS[23:31]  # 06_decoding_attention's
_ID = re.compile(r"^[a-z]+(-[a-z]+)+$")


def test_the_catalogue_holds_the_spec_ids_and_additions_that_point_into_the_lessons():
    """Every id of the spec, in its order; an id beyond them (issue 34: a common mistake none of the
    spec's fits) says which lesson section shows the right way."""
    assert tuple(m for m in CATALOGUE if m in SPEC_IDS) == SPEC_IDS
    for extra in (m for m in CATALOGUE if m not in SPEC_IDS):
        assert _ID.match(extra) and re.search(r'\d\d section \d+, "[^"]+"', CATALOGUE[extra].hint), extra


def test_the_spec_shipped_in_docs_lists_these_ids():
    section = (ROOT / "docs" / "course-spec.md").read_text().split("### Misconception catalogue", 1)[1]
    listed = [m for m in re.findall(r"`([a-z-]+)`", section.split("##", 1)[0]) if _ID.match(m)]
    assert tuple(dict.fromkeys(listed)) == SPEC_IDS


def test_the_spec_shipped_in_docs_is_the_course_teams_own():
    """Where the course's shared folder is at hand, docs/course-spec.md is a copy of its spec."""
    shared = ROOT.parent / "shared" / "course-spec.md"
    if not shared.is_file():
        pytest.skip("the course's shared folder, with course-spec.md, is not beside this checkout")
    assert (ROOT / "docs" / "course-spec.md").read_text() == shared.read_text(), \
        "docs/course-spec.md is stale: copy ../shared/course-spec.md over it"


def emitted_ids() -> dict[str, set[str]]:
    """Every id the suites, the lesson's mistakes and the grader can name: the first item of a tuple
    (the ``misconceptions`` of a failure, a candidate ``(id, explanation, output)``) or the first
    argument of a call (``Mistake(id, ...)``) that looks like an id."""
    found: dict[str, set[str]] = {}
    suites = ROOT / "suites"
    files = [*sorted((suites / "hidden").glob("test_*.py")), *sorted((suites / "lesson").glob("*.py")),
             *sorted((ROOT / "grader").rglob("*.py"))]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            named = isinstance(node, ast.Call) and node.args and getattr(node.func, "id", "") in ("Mistake", "matches")
            first = node.elts[0] if isinstance(node, ast.Tuple) and node.elts else node.args[0] if named else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and _ID.match(first.value):
                found.setdefault(first.value, set()).add(path.name)
    return found


def test_every_id_the_suites_can_name_is_in_the_catalogue():
    found = emitted_ids()
    unknown = {m: sorted(files) for m, files in found.items() if m not in CATALOGUE}
    assert not unknown, f"ids named but not in the catalogue: {unknown}"
    expected = set(CATALOGUE)  # the spec's ids and the additions: each one named somewhere
    if not (ROOT / "suites" / "hidden" / "test_06_decoding_attention.py").is_file():
        expected -= set(DECODING_IDS)  # named by 06's suite, which is not written yet (issue 13)
    assert set(found) == expected, f"never named anywhere: {sorted(expected - set(found))}"


def _headings() -> set[str]:
    headings = set()
    for notebook in (ROOT / "solutions").glob("*/*.ipynb"):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                for line in "".join(cell["source"]).splitlines():
                    if line.startswith("#"):
                        headings.add(_plain(line.lstrip("#").strip()))
    return headings


def _plain(title: str) -> str:
    """A section title without its markup: LaTeX, backticks, parentheses and the section number."""
    return re.sub(r"^\d+\.\s*", "", re.sub(r"[$\\{}()`]", "", title))


def test_hints_point_to_sections_that_exist_in_the_lessons():
    headings = _headings()
    pointing = 0
    for entry in CATALOGUE.values():
        titles = re.findall(r'"([^"]+)"', entry.hint)
        for title in titles:
            assert _plain(title) in headings, f"{entry.id}: no lesson section is called {title!r}"
        pointing += bool(titles)
    assert pointing >= 18  # all but the conventions that every lesson shares


def test_every_entry_explains_hints_and_shows_the_slip():
    for entry in CATALOGUE.values():
        assert entry.explanation.endswith(".") and len(entry.explanation) > 40, entry.id
        assert len(entry.hint) > 40, entry.id
        ast.parse(entry.example.split("  #")[0].strip())  # a line of Python
        paragraph = entry.feedback()
        assert paragraph.startswith(entry.id) and entry.explanation in paragraph and entry.hint in paragraph


def test_lookup_names_an_unknown_id():
    assert lookup("mask-inverted", CATALOGUE).id == "mask-inverted"
    try:
        lookup("mask-upside-down", CATALOGUE)
    except KeyError as error:
        assert "mask-upside-down" in str(error)
    else:
        raise AssertionError("an unknown id was accepted")


def test_the_mask_inverted_hint_of_02_points_to_02_first():
    """Issue 46: 02's attention_weights is handed its mask; the hint pointed its learner to 03's triu/tril,
    a lesson not yet read. It leads with 02's section on masks and the slip an 02 learner makes (~mask)."""
    entry = lookup("mask-inverted", CATALOGUE)
    first = re.search(r"\b(0\d) section \d+", entry.hint)
    assert first and first.group(1) == "02" and '02 section 2, "Masks"' in entry.hint
    assert "~mask" in entry.hint and "~mask" in entry.example


GENERIC_IDS = ("input-mutated", "wrong-dtype", "wrong-device", "not-vectorised", "view-on-non-contiguous", "forbidden-op")


def test_the_grader_knows_the_generic_pytorch_mistakes_and_no_course_s_own():
    """Issue 48: the grader holds only the generic ids (in words of no course's lessons); every other id
    the course names is the course's, and no file under grader/ writes one."""
    assert tuple(entry.id for entry in GENERIC) == GENERIC_IDS
    assert all(not re.search(r"\d\d section", entry.hint) for entry in GENERIC)
    assert set(lookup(m).id for m in GENERIC_IDS) == set(GENERIC_IDS)
    course_ids = [m for m in CATALOGUE if m not in GENERIC_IDS]
    assert len(course_ids) == 27
    for path in sorted((ROOT / "grader").rglob("*.py")):
        text = path.read_text()
        written = [m for m in course_ids if f'"{m}"' in text or f"'{m}'" in text]
        assert not written, f"{path.relative_to(ROOT)} writes the course's ids {written}"


def test_the_course_gives_the_generic_ids_in_its_own_words():
    """The course's file may word a generic id its own way, pointing into its lessons: its words win."""
    assert CATALOGUE["not-vectorised"].hint != lookup("not-vectorised").hint
    assert "01 section 6" in CATALOGUE["not-vectorised"].hint


def _course_with(tmp_path, toml: str | None):
    text = (ROOT / "course.toml").read_text()
    if toml is not None:
        (tmp_path / "words.toml").write_text(toml)
        text = text.replace('misconceptions = "suites/lesson/misconceptions.toml"', 'misconceptions = "words.toml"')
    (tmp_path / "course.toml").write_text(text.replace('figures = "suites/lesson/figures.py"', ""))
    return tmp_path


@pytest.mark.parametrize("toml,said", [
    ('[mask-sideways]\nexplanation = "a"\nhint = "b"\nexample = "c"\ncolour = "red"\n', "unknown key 'colour'"),
    ('[mask-sideways]\nexplanation = "a"\nhint = "b"\n', "[mask-sideways]: example must be a non-empty string"),
    ('mask-sideways = "a"\n', "'mask-sideways' must be a table"),
    ('[mask-sideways\n', "not valid TOML"),
    (None, "course.misconceptions: no file 'suites/lesson/misconceptions.toml'"),
])
def test_a_misconceptions_file_that_is_not_right_is_refused_naming_the_key(tmp_path, toml, said):
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_course(_course_with(tmp_path, toml))


def test_a_course_s_own_misconception_is_known_beside_the_generic_ones(tmp_path):
    course = load_course(_course_with(tmp_path, '[mask-sideways]\nexplanation = "Sideways."\nhint = "Turn it."\n'
                                                'example = "m.T"\n'))
    assert list(course.catalogue) == ["mask-sideways", *GENERIC_IDS]
    assert course.catalogue["mask-sideways"].feedback().startswith("mask-sideways: Sideways.")
