"""The generated student stubs match the reference solutions' API and implement nothing.

For every assignment of course.toml: the stub in ``assignments/`` and the solution in ``solutions/`` export the
same public functions and classes with the same signatures and docstrings; every exercise exists in both;
every stub exercise raises NotImplementedError on valid arguments (arguments that the solution accepts);
no solution marker is left in a stub.
"""
from __future__ import annotations

import inspect
import tomllib
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
COURSE = tomllib.loads((REPO / "course.toml").read_text(encoding="utf-8"))
ASSIGNMENT_IDS = [entry["id"] for entry in COURSE["assignments"]]
EXERCISES = [(entry["id"], name) for entry in COURSE["assignments"] for name in entry["points"]]
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


def public_api(module):
    """The functions and classes defined by ``module`` itself (not imported), without private names."""
    return {
        name: obj
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == module.__name__
    }


def own_methods(cls):
    return {name: obj for name, obj in vars(cls).items() if inspect.isfunction(obj)}


def _g():
    return torch.Generator().manual_seed(0)


def _r(*shape):
    return torch.randn(shape, generator=_g())


# Valid arguments for every exercise: sol -> (args, kwargs). The solution must accept them.
VALID_CALLS = {
    "attention_scores_for_query": lambda sol: ((_r(6, 3), _r(3)), {}),
    "attention_scores_loop": lambda sol: ((_r(6, 3),), {}),
    "softmax_naive": lambda sol: ((_r(2, 5),), {"dim": 0}),
    "softmax": lambda sol: ((_r(2, 5),), {"dim": -1}),
    "context_vector_loop": lambda sol: ((_r(6, 3), torch.full((6,), 1 / 6)), {}),
    "attention_scores": lambda sol: ((_r(2, 6, 3),), {}),
    "simple_self_attention": lambda sol: ((_r(2, 6, 3),), {}),
    "attention_weights": lambda sol: ((_r(4, 8), _r(5, 8)), {"mask": torch.eye(4, 5, dtype=torch.bool)}),
    "scaled_dot_product_attention": lambda sol: ((_r(4, 8), _r(5, 8), _r(5, 3)), {}),
    "SelfAttention_v1": lambda sol: ((3, 2), {}),
    "SelfAttention_v2": lambda sol: ((3, 2), {"qkv_bias": False}),
    "copy_v2_weights_into_v1": lambda sol: ((sol.SelfAttention_v2(3, 2), sol.SelfAttention_v1(3, 2)), {}),
    "CrossAttention": lambda sol: ((16, 16, 24, 28), {}),
    "causal_mask": lambda sol: ((5,), {}),
    "apply_causal_mask": lambda sol: ((_r(2, 5, 5),), {}),
    "renormalize_causal_weights": lambda sol: ((torch.softmax(_r(5, 5), dim=-1),), {}),
    "padding_mask": lambda sol: ((torch.tensor([2, 5, 0]), 5), {}),
    "causal_padding_mask": lambda sol: ((torch.tensor([2, 5, 0]), 5), {}),
    "CausalAttention": lambda sol: ((3, 2, 6, 0.0), {}),
    "split_heads": lambda sol: ((_r(2, 5, 8), 2), {}),
    "merge_heads": lambda sol: ((_r(2, 2, 5, 4),), {}),
    "split_qkv": lambda sol: ((_r(2, 5, 24), 2), {}),
    "MultiHeadAttentionWrapper": lambda sol: ((3, 2, 6, 0.0), {"num_heads": 2}),
    "MultiHeadAttention": lambda sol: ((3, 4, 6, 0.0), {"num_heads": 2}),
    "FusedQKVAttention": lambda sol: ((8, 12), {"num_heads": 3}),
    "online_softmax": lambda sol: ((_r(3, 10), 4), {}),
    "flash_attention": lambda sol: ((_r(5, 8), _r(7, 8), _r(7, 3)), {"block_size": 4, "causal": True}),
    "compute_rope_params": lambda sol: ((8,), {"context_length": 16}),
    "apply_rope": lambda sol: ((_r(2, 2, 5, 8), *sol.compute_rope_params(8, context_length=16)), {"offset": 3}),
    "repeat_kv": lambda sol: ((_r(2, 2, 5, 4), 2), {}),
    "sliding_window_mask": lambda sol: ((4, 6, 3), {"q_start": 2}),
    "CachedMultiHeadAttention": lambda sol: ((3, 4, 6, 0.0), {"num_heads": 2}),
    "GroupedQueryAttention": lambda sol: ((3, 4, 0.0, 2, 1), {}),
    "MultiHeadAttentionWithSWA": lambda sol: ((3, 4, 0.0, 2), {"sliding_window_size": 2}),
}

# forward() arguments for the module exercises, for a module built from VALID_CALLS.
FORWARD_INPUTS = {
    "SelfAttention_v1": lambda: (_r(6, 3),),
    "SelfAttention_v2": lambda: (_r(6, 3),),
    "CrossAttention": lambda: (_r(6, 16), _r(4, 16)),
    "CausalAttention": lambda: (_r(2, 6, 3),),
    "MultiHeadAttentionWrapper": lambda: (_r(2, 6, 3),),
    "MultiHeadAttention": lambda: (_r(2, 6, 3),),
    "FusedQKVAttention": lambda: (_r(2, 5, 8),),
    "CachedMultiHeadAttention": lambda: (_r(2, 6, 3),),
    "GroupedQueryAttention": lambda: (_r(2, 6, 3),),
    "MultiHeadAttentionWithSWA": lambda: (_r(2, 6, 3),),
}


@pytest.mark.parametrize("assignment_id", ASSIGNMENT_IDS)
def test_stub_and_solution_export_the_same_names(assignment_id, solution, stub):
    sol_api, stub_api = public_api(solution(assignment_id)), public_api(stub(assignment_id))
    assert sol_api, "the solution defines no public function or class"
    assert sorted(stub_api) == sorted(sol_api)
    for name, obj in sol_api.items():
        assert inspect.isclass(stub_api[name]) == inspect.isclass(obj), name


@pytest.mark.parametrize("assignment_id", ASSIGNMENT_IDS)
def test_every_exercise_exists_in_stub_and_solution(assignment_id, solution, stub):
    exercises = [name for aid, name in EXERCISES if aid == assignment_id]
    assert exercises, "course.toml lists no exercise for this assignment"
    for module in (solution(assignment_id), stub(assignment_id)):
        missing = [name for name in exercises if name not in public_api(module)]
        assert not missing, f"{module.__file__} lacks {missing}"


@pytest.mark.parametrize("assignment_id", ASSIGNMENT_IDS)
def test_signatures_and_docstrings_are_identical(assignment_id, solution, stub):
    sol_module, stub_module = solution(assignment_id), stub(assignment_id)
    assert stub_module.__doc__ == sol_module.__doc__
    sol_api, stub_api = public_api(sol_module), public_api(stub_module)
    for name, sol_obj in sol_api.items():
        stub_obj = stub_api[name]
        assert stub_obj.__doc__ == sol_obj.__doc__, f"docstring of {name}"
        if inspect.isfunction(sol_obj):
            assert inspect.signature(stub_obj) == inspect.signature(sol_obj), name
            continue
        assert [b.__qualname__ for b in stub_obj.__mro__[1:]] == [b.__qualname__ for b in sol_obj.__mro__[1:]]
        sol_methods, stub_methods = own_methods(sol_obj), own_methods(stub_obj)
        if issubclass(sol_obj, torch.nn.Module):
            assert {"__init__", "forward"} <= set(sol_methods), name
        assert sorted(stub_methods) == sorted(sol_methods), name
        for method, sol_fn in sol_methods.items():
            stub_fn = stub_methods[method]
            assert inspect.signature(stub_fn) == inspect.signature(sol_fn), f"{name}.{method}"
            assert stub_fn.__doc__ == sol_fn.__doc__, f"docstring of {name}.{method}"


def test_every_exercise_has_valid_arguments_here():
    missing = sorted({name for _, name in EXERCISES} - set(VALID_CALLS))
    assert not missing, f"add valid arguments for {missing} to VALID_CALLS"


@pytest.mark.parametrize(("assignment_id", "name"), EXERCISES, ids=[f"{a}::{n}" for a, n in EXERCISES])
def test_stub_raises_not_implemented_on_valid_arguments(assignment_id, name, solution, stub):
    sol_obj = getattr(solution(assignment_id), name)
    stub_obj = getattr(stub(assignment_id), name)
    sol_module = solution(assignment_id)

    args, kwargs = VALID_CALLS[name](sol_module)
    built = sol_obj(*args, **kwargs)  # the arguments are valid: the reference accepts them
    if inspect.isclass(sol_obj):
        forward_args = FORWARD_INPUTS[name]()
        assert isinstance(built(*forward_args), torch.Tensor)
    args, kwargs = VALID_CALLS[name](sol_module)
    with pytest.raises(NotImplementedError):
        stub_obj(*args, **kwargs)
    if inspect.isclass(stub_obj):  # forward is a stub too, whoever's instance it gets
        with pytest.raises(NotImplementedError):
            stub_obj.forward(built, *FORWARD_INPUTS[name]())


@pytest.mark.parametrize("assignment_id", ASSIGNMENT_IDS)
def test_stub_contains_no_solution_marker(assignment_id, released):
    entry = next(e for e in COURSE["assignments"] if e["id"] == assignment_id)
    text = (released / assignment_id / entry["module"]).read_text(encoding="utf-8")
    leaked = [marker for marker in MARKERS if marker in text]
    assert not leaked, f"the stub contains {leaked}"
    assert "raise NotImplementedError" in text
    solution_text = (REPO / "solutions" / assignment_id / entry["module"]).read_text(encoding="utf-8")
    assert "### BEGIN SOLUTION" in solution_text, "the solution has no solution block to strip"
