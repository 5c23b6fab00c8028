"""What an exercise may not call is exactly what its row in the contract names, exercise by exercise."""
import re
from pathlib import Path

from grader.config import load_course
from grader.grading.forbidden import FORBIDDEN_CALLS, OPERATIONS_OF, forbidden_operations

ROOT = Path(__file__).resolve().parents[3]


def contract_rows() -> dict[str, str]:
    """exercise -> the meaning cell of its row in docs/course-spec.md's curriculum tables."""
    rows = {}
    for line in (ROOT / "docs" / "course-spec.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = " | ".join(cells[2:])
    return rows


def forbidden_by_contract(meaning: str) -> tuple[str, ...]:
    said = re.search(r"may not (?:call|use) (?:any [^(]*\()?([^;)]*)", meaning)
    return tuple(re.findall(r"`([^`]+)`", said.group(1))) if said else ()


def test_every_exercise_forbids_exactly_what_its_row_in_the_contract_names():
    rows = contract_rows()
    course = load_course(ROOT)
    exercises = [e for a in course.assignments for e in a.exercises]
    assert set(exercises) <= set(rows), "an exercise of course.toml has no row in the contract"
    for exercise in exercises:
        assert FORBIDDEN_CALLS.get(exercise, ()) == forbidden_by_contract(rows[exercise]), exercise
    assert forbidden_by_contract(rows["softmax"]) == ("torch.softmax", "F.softmax", "nn.Softmax", "log_softmax",
                                                      "torch.special.softmax")
    assert len(forbidden_by_contract(rows["scaled_dot_product_attention"])) == 3


def test_06_and_the_classes_of_02_to_05_forbid_nothing():
    for exercise in ("CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA",
                     "MultiHeadAttention", "attention_weights", "flash_attention", "online_softmax", "CausalAttention"):
        assert forbidden_operations(exercise) == ()


def test_each_forbidden_call_is_refused_at_the_function_and_at_the_dispatcher():
    assert {"softmax", "_softmax", "_safe_softmax", "log_softmax", "_log_softmax"} <= set(forbidden_operations("softmax"))
    sdpa = set(forbidden_operations("scaled_dot_product_attention"))
    assert {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
            "multi_head_attention_forward", "_native_multi_head_attention"} <= sdpa
    assert all(OPERATIONS_OF[call] for calls in FORBIDDEN_CALLS.values() for call in calls)
