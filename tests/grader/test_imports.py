"""The package's modules import one another without cycles (lazy imports inside functions count, and so
do imports for type checking only), so each can be read, and tested, from the bottom up; its folders
import only what their roles allow."""
import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parents[2] / "grader"


def _type_checking_only(node) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def name_of(path: Path) -> str:
    """A module's name below ``grader``: ``runner``, ``inside.worker``, ``sandbox`` (a package's __init__)."""
    parts = path.relative_to(GRADER).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str], typing_too: bool = False) -> set[str]:
    """The grader modules ``path`` imports, wherever in it (``grader.x.y``, ``from grader.x import y``)."""
    found: set[str] = set()
    own = name_of(path) if path.is_relative_to(GRADER) else path.stem

    def named(dotted: str) -> str:  # the longest known module a dotted name starts with
        parts = dotted.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts)

    def visit(node):
        if _type_checking_only(node) and not typing_too:
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "grader":
                base = node.module.removeprefix("grader").lstrip(".")
                for alias in node.names:  # a submodule by name, else what it is taken from
                    found.add(named(f"{base}.{alias.name}".lstrip(".")) or named(base))
        elif isinstance(node, ast.Import):
            found.update(named(a.name.removeprefix("grader.")) for a in node.names if a.name.startswith("grader."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found - {own, ""}


def graph(typing_too: bool = False) -> dict[str, set[str]]:
    """Every module of the package, subpackages included, and the grader modules it imports."""
    files = sorted(GRADER.rglob("*.py"))
    modules = {name_of(p) for p in files} - {""}
    return {name_of(p): imports_of(p, modules, typing_too) for p in files if name_of(p)}


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
    assert len(edges) > 30 and "grading.outcomes" in edges["grading.pytest_session"]
    assert "grading.outcomes" in edges["grading.fixture"]
    assert "inside.protocol" in edges["inside.worker"] and "sandbox.submission_sandbox" in edges["grading.grader"]
    assert cycles(edges) == [] and cycles(graph(typing_too=True)) == []


SHARED_BASICS = {"config", "errors", "submission"}  # what the sandbox side may use besides grader.inside


def test_the_student_side_imports_only_itself_and_the_sandbox_side_only_it_and_the_shared_basics():
    """The trust boundary as folders (issue 22): grader/inside/ is all a sandbox holds, so it imports
    nothing of the grader outside itself; grader/sandbox/ is the grading side of the boundary, which
    uses grader/inside/ and the shared basics only, never the grading (runner, session, harness...)."""
    edges = graph()
    inside = {m for m in edges if m.startswith("inside.")}
    sandbox = {m for m in edges if m.startswith("sandbox.")}
    assert {"inside.protocol", "inside.zygote", "inside.worker", "inside.notebook_source"} <= inside
    assert {"sandbox.client", "sandbox.confine", "sandbox.cgroups", "sandbox.submission_sandbox"} <= sandbox
    for module in inside:
        assert edges[module] <= inside, (module, edges[module] - inside)
    for module in sandbox:
        allowed = inside | sandbox | SHARED_BASICS | {"sandbox", "inside"}
        assert edges[module] <= allowed, (module, edges[module] - allowed)
    for module in SHARED_BASICS:  # the basics lean on nothing of the boundary's or the grading's
        assert not edges[module] & (sandbox | {m for m in edges if m.startswith("grading")}), (module, edges[module])


def test_the_grading_reaches_the_sandbox_through_its_submission_sandbox_only():
    """grading/grader.py grades; grader/sandbox/submission_sandbox.py builds sandboxes (zygote, cgroups, uids, working copies)."""
    edges = graph()
    assert {m for m in edges["grading.grader"] if m.startswith("sandbox.")} <= {"sandbox.submission_sandbox", "sandbox.confine"}
    assert "sandbox.cgroups" not in edges["grading.grader"] and "sandbox.client" not in edges["grading.grader"]


def test_the_copy_a_sandbox_holds_is_grader_inside_whole(tmp_path):
    from grader.sandbox.confine import copy_student_side

    copy_student_side(tmp_path)
    held = sorted(str(p.relative_to(tmp_path / "grader")) for p in (tmp_path / "grader").rglob("*.py"))
    assert held == ["__init__.py", *sorted(f"inside/{p.name}" for p in (GRADER / "inside").glob("*.py"))]


def _grader_imports_of(source: str) -> set[str]:
    """The grader modules a file's source imports (at any depth of its code)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and (node.module == "grader" or node.module.startswith("grader.")):
            found |= {f"{node.module}.{a.name}" if node.module == "grader" else node.module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name == "grader" or a.name.startswith("grader.")}
    return found


def test_the_suites_import_nothing_of_the_grader_but_its_authoring_api():
    """Issue 37: hidden, public and lesson suites (which ship to students in their public form) import
    grader.authoring alone, so that a move inside grader/ never breaks a released suite."""
    suites = Path(__file__).resolve().parents[2] / "suites"
    found = {str(p.relative_to(suites)): _grader_imports_of(p.read_text()) - {"grader.authoring"}
             for p in sorted(suites.rglob("*.py"))}
    assert {name: sorted(mods) for name, mods in found.items() if mods} == {}
    assert sum(1 for p in suites.rglob("*.py") if "grader.authoring" in _grader_imports_of(p.read_text())) >= 15


def test_the_suite_rule_sees_every_way_to_import_the_grader():
    assert _grader_imports_of("from grader import diagnose\nimport grader.grading.fixture\n") == \
        {"grader.diagnose", "grader.grading.fixture"}
    assert _grader_imports_of("def f():\n    from grader.grading.outcomes import CheckFailed\n") == {"grader.grading.outcomes"}
    assert _grader_imports_of("from grader.authoring import Mistake\n") == {"grader.authoring"}


# Issue 37: the folders by role, and what each may not import. A folder is a module name's first part;
# the modules at grader/'s top (cli, api, config, errors, catalogue, results, figures, authoring, ...) are
# no folder's and stand above or below them as their imports say.
FOLDERS = ("grading", "batch", "reporting", "platforms", "course", "inside", "sandbox")
FORBIDDEN = {
    "reporting": {"grading", "batch"},  # reports read results; they never grade
    "grading": {"batch", "reporting", "platforms", "course"},  # one submission's grading, on its own
    "batch": {"platforms", "course"},
    "course": {"batch", "reporting", "platforms"},
}
TOP_AT_MOST = 15


def folder_of(module: str) -> str | None:
    first = module.split(".")[0]
    return first if first in FOLDERS and "." in module or module in FOLDERS else None


def broken_rules(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every (importer, imported) pair of modules where the importer's folder may not import the other's."""
    return sorted((module, other) for module, imported in edges.items() for other in imported
                  if folder_of(other) in FORBIDDEN.get(folder_of(module), ()))


def test_each_folder_says_its_role_in_one_line_and_the_top_holds_few_modules():
    for folder in FOLDERS:
        doc = ast.get_docstring(ast.parse((GRADER / folder / "__init__.py").read_text())) or ""
        summary = doc.split("\n\n")[0]  # the first paragraph: one line, one sentence
        assert summary and "\n" not in summary and summary.endswith("."), (folder, summary)
    top = sorted(p.name for p in GRADER.glob("*.py"))
    assert len(top) <= TOP_AT_MOST, top


def test_no_folder_imports_what_its_role_forbids():
    assert broken_rules(graph()) == []


def test_the_folder_rules_catch_a_broken_one():
    """The rule test is not vacuous: an import that breaks a rule, added to the real graph, is found."""
    edges = {module: set(imported) for module, imported in graph().items()}
    assert {"reporting.formats", "grading.grader", "batch.autograde", "course.release"} <= set(edges)
    edges["reporting.formats"].add("grading.grader")  # a report that grades
    edges["grading.grader"].add("batch.progress")  # a grading run that knows about batches
    assert broken_rules(edges) == [("grading.grader", "batch.progress"), ("reporting.formats", "grading.grader")]
    edges["course.release"].add("course.stubs")  # within a folder: allowed
    assert len(broken_rules(edges)) == 2


def test_the_cycle_rule_sees_imports_made_only_for_type_checking_too(tmp_path):
    """Issue 37: no cycles, TYPE_CHECKING ones included: a cycle closed only under TYPE_CHECKING counts."""
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from grader.grading.grader import Grader\n"
    (tmp_path / "m.py").write_text(source)
    assert imports_of(tmp_path / "m.py", {"grading.grader"}, typing_too=True) == {"grading.grader"}
    typed = graph(typing_too=True)
    assert cycles(typed) == []
