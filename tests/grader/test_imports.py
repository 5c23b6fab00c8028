"""The package's modules import one another without cycles (lazy imports inside functions count;
imports for type checking only do not), so each can be read, and tested, from the bottom up."""
import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parents[2] / "grader"


def _type_checking_only(node) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports_of(path: Path) -> set[str]:
    """The grader modules ``path`` imports, wherever in it (``grader.x`` and ``from grader import x``)."""
    found: set[str] = set()

    def visit(node):
        if _type_checking_only(node):
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "grader":
                found.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("grader."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found - {path.stem}


def graph() -> dict[str, set[str]]:
    modules = {p.stem for p in GRADER.glob("*.py")}
    return {p.stem: imports_of(p) & modules for p in GRADER.glob("*.py")}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_of_the_grader_import_each_other_even_through_others():
    edges = graph()
    assert len(edges) > 30 and "outcomes" in edges["session"] and "outcomes" in edges["harness"]
    assert cycles(edges) == []
