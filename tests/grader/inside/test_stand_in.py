"""A class helper's stand-in (grader/inside/stand_in.py), put into the student's own class by the worker
(grader/inside/worker.py Server.stand_in): nothing of the run with it in place tells it apart by identity."""
import copy
import types

import torch

from grader.inside.protocol import WorkerSpec
from grader.inside.worker import Server


class CausalAttention(torch.nn.Module):  # the student's class: super() gives __init__ a closure cell
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        return self.W_query(x) * 0  # a slip the stand-in's answers must not show


def _server(ask) -> Server:
    module = types.ModuleType("causal_attention")
    module.CausalAttention = CausalAttention
    spec = WorkerSpec(module_name="causal_attention", source="", search_path=(), workdir="/", student_root="/nowhere",
                      display_map=(), device="cpu", memory_bytes=0, reply_limit=0)
    return Server(spec, module, watch=None, ask=ask)


def test_a_class_runs_the_stand_in_through_its_own_method_objects_and_gets_them_back():
    """Round 26c: a wrapper kept the class's forward at import and told the run with a right class apart by
    `CausalAttention.forward is not` it; and the stand-in's build arguments on the instance were a name to probe."""
    asked = []

    def ask(question):
        asked.append(question)
        if question["op"] == "new":
            return {"linears": {"W_query": (2, 3, False)}, "params": {}}
        return {"out": torch.ones(4, 3)}

    methods = {name: CausalAttention.__dict__[name] for name in ("__init__", "forward")}
    codes = {name: method.__code__ for name, method in methods.items()}
    server = _server(ask)
    assert server.stand_in({"helpers": ["CausalAttention"]})["placed"] == ["CausalAttention"]
    assert {name: CausalAttention.__dict__[name] for name in methods} == methods  # the same function objects
    head = CausalAttention(2, 3)
    out = head(torch.randn(4, 2))
    assert torch.equal(out, torch.ones(4, 3))  # the grader's answer, not the student's zeros
    assert [q["op"] for q in asked] == ["new", "forward"] and asked[1]["new_args"] == (2, 3)
    assert set(vars(head)) == set(vars(torch.nn.Module())), set(vars(head)) - set(vars(torch.nn.Module()))
    twin = copy.deepcopy(head)  # heads made by copying one (session 18's styles hunt): built as it was
    twin(torch.randn(4, 2))
    assert asked[-1]["op"] == "forward" and asked[-1]["new_args"] == (2, 3)
    assert set(vars(twin)) == set(vars(head))
    server.stand_in({"helpers": []})  # an empty request restores the student's own
    assert {name: method.__code__ for name, method in methods.items()} == codes
    assert "__getstate__" not in vars(CausalAttention) and "__setstate__" not in vars(CausalAttention)
    assert not torch.equal(CausalAttention(2, 3)(torch.randn(4, 2)), torch.ones(4, 3))
    assert not [key for key in globals() if key.startswith("grader stand-in")]
