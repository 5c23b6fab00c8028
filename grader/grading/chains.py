"""Which of the student's own helper exercises an exercise calls, read from its code (issue 44, session 19's
hunt for false alarms): a check that failed where the exercise uses a helper of the student's that is wrong is
run again with right versions of those helpers in place (grader.grading.pytest_session.GradingPlugin._verify),
and that run alone decides. A suite's own blame models one helper of one exercise (03's CausalAttention given
its causal_mask); an exercise written on another helper of the course's (CausalAttention on the student's
apply_causal_mask, split_qkv on split_heads, attention_scores_loop on attention_scores_for_query, a
MultiHeadAttention that imports 03's causal_mask) lost the points of that helper's mistake a second time.

What is read is the submission's files, here in the grading process (as grader.grading.observable reads them),
never anything the student's process says: a name the exercise's definition writes, directly or through a
function or class of the file's own that it names. A name is only where a verification may look: the run with
right helpers decides, checked by the grader as every verification is, and a helper that lost no points keeps
nothing (grader.grading.grader.charged_once).
"""
from __future__ import annotations

import ast

from grader.grading.outcomes import CheckFailed, RightGivenHelper, StudentFault
from grader.grading.stand_ins import HELPERS, RUNS


def helpers_named(paths, exercise: str, helpers, course_modules=frozenset()) -> tuple[str, ...]:
    """The names among ``helpers`` (exercises that can be stood in for) that ``exercise``'s definitions in the
    files ``paths`` (a module, the notebook laid over it) call as the student's own, and those called by the
    file's own functions and classes it names in turn (helpers' own code included: CausalAttention on
    apply_causal_mask on causal_mask), nearest first. The student's own: a function or class the files define,
    one imported by name from a course module (``course_modules``: ``from causal_attention import
    causal_mask``), or read off such a module (``causal_attention.causal_mask``); never a library's of the same
    name (``torch.softmax``). Empty where the files cannot be read."""
    from grader.grading.observable import kept_code

    definitions: dict[str, list[ast.AST]] = {}  # a module-level name -> what binds it (a def, a class, a value)
    imported: dict[str, str] = {}  # a name bound by importing a course module's own: -> the name there
    modules = set()  # names the course modules are bound to
    for path in paths:
        try:
            tree = ast.parse(kept_code(path)[0])
        except Exception:  # noqa: BLE001 - what cannot be read names nothing (grader.grading.observable says why)
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                definitions.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                # an alias, a partial, a lambda: ``_mask = apply_causal_mask`` (session 20's hunt)
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        definitions.setdefault(target.id, []).append(node.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in course_modules:
                imported.update((alias.asname or alias.name, alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                modules.update(alias.asname or alias.name for alias in node.names if alias.name in course_modules)
    helpers = frozenset(helpers) - {exercise}
    found, seen, queue = [], {exercise}, [exercise]
    while queue:
        name = queue.pop(0)
        for definition in definitions.get(name, ()):
            for node in ast.walk(definition):
                if isinstance(node, ast.Name):
                    word = node.id
                    helper = imported.get(word, word if word in definitions else None)
                elif isinstance(node, ast.Attribute):
                    word = None
                    helper = node.attr if isinstance(node.value, ast.Name) and node.value.id in modules else None
                else:
                    continue
                if helper in helpers and helper not in found:
                    found.append(helper)
                if word in definitions and word not in seen:
                    seen.add(word)
                    queue.append(word)
    return tuple(found)


STILL_WRONG = 2  # failed cases of one exercise that runs with right helpers showed wrong before no more are run


class ChainRuns:
    """The runs with a right version of one helper the exercise's code calls (:func:`helpers_named`), for the
    grading plugin (grader.grading.pytest_session.GradingPlugin): where a check failed, or where its case was kept
    given a helper that is itself right given one of its own. Each run stands in for one helper alone, and keeps
    the case only where the exercise, with that helper right and the rest of the student's code as it is, is
    right: the case is then kept given that helper (``forgiven_by``), or also given it (``also``), and stays kept
    where one of them lost points (grader.grading.grader.charged_once). Two wrong helpers whose mistakes only
    together explain a case are not stood in for together: a helper that lost nothing could not then be told
    from one whose own mistake, made where its checks never look, the case shows (red team round 27a)."""

    def __init__(self, plugin):
        self.plugin = plugin
        self.still_wrong: dict[tuple[str, str], int] = {}  # (assignment, exercise) -> cases such runs showed wrong
        self.named: dict[tuple[str, str], tuple[str, ...]] = {}  # (assignment, exercise) -> _named's, read once

    def after_failure(self, item, args, failure: Exception, tried: tuple[str, ...] = ()) -> None:
        """Raises the case kept given one of the helpers the exercise calls, where a run with it right is right;
        returns (the failure stands) where there is none, where the failure is not one a helper can cause
        (forbidden, not attempted, timed out, not observed), where a check of a rule of how the exercise computes
        failed on the rule, not on a value (the tracer saw the exercise's own frames break it, a helper's share
        counted apart: grader.grading.stand_ins.uses; red team round 25b's a2forgive, a loop run only beside its
        own softmax), or where such runs already showed this exercise wrong on its own STILL_WRONG times (each costs a
        worker: the exercise's own mistake then costs those cases, as it would beside right helpers). ``tried``: the
        helpers a run with a right one already showed not to explain it (the suite's blame's)."""
        grade = _grade(item)
        if grade is None or grade.cascades != "once":
            return
        if isinstance(failure, CheckFailed) and grade.rules_read and not grade.value_failed:
            return  # a rule of how it computes, broken in its own frames (a raise is no rule's)
        if isinstance(failure, StudentFault) and failure.kind != "error":
            return
        if isinstance(failure, CheckFailed) and failure.message.startswith("not observed:"):
            return
        assignment, exercise = _exercise_of(item)
        if self.still_wrong.get((assignment, exercise), 0) >= STILL_WRONG:
            return
        named = [h for h in self._named(assignment, exercise) if h not in grade.helpers_right and h not in tried]
        candidates = self._unless_passed(assignment, named)
        kept = self._singles(item, args, grade, failure, candidates) if candidates else None
        if kept is None:
            if candidates:
                self.still_wrong[(assignment, exercise)] = self.still_wrong.get((assignment, exercise), 0) + 1
            return
        raise kept

    def also_given(self, item, args, kept: RightGivenHelper, grade) -> None:
        """``kept`` (verified right given the student's helper) also given each helper that helper's own code
        calls (``kept.also``), where a run with that one right, and the student's helper as it is, is right:
        CausalAttention right given apply_causal_mask keeps its own checks, so a wrapper kept given CausalAttention
        holds by apply_causal_mask's lost points. Nothing where the helper lost points here already. ``grade``: the
        check's first run's."""
        verified = _grade(item)
        helper = kept.helper.split(" (", 1)[0]  # (04's wrapper names "CausalAttention (assignment 03)")
        assignment, exercise = _exercise_of(item)
        owner = self._assignment_of(helper)
        if grade is None or owner is None or \
                self._status(assignment).get(helper) is False:  # (lost points: the case holds by them)
            return
        # (a helper whose code names the exercise: never kept given itself)
        deep = [h for h in self._named(owner, helper) if h not in (helper, exercise)]
        found = self._singles(item, args, grade, kept.unverified or kept, self._unless_passed(assignment, deep),
                              every=True)
        item.funcargs["grade"] = verified  # what the outcome reads is the verified run's
        if found is not None:
            kept.also = [found.helper, *found.also, *found.either]

    def _singles(self, item, args, grade, failure, candidates, every: bool = False):
        """One run for each of ``candidates`` ((helper, whether it lost points here)), each alone; the first kept
        case, holding the others kept in ``also`` where ``every`` (all tried: a helper's own helpers), else in
        ``either`` (the exercise's own other helpers, tried until one that lost points here), or None. The outcome
        reads the first run's grade again where none was kept."""
        from grader.grading.diagnose import stand_in_decides

        kept = None
        for helper, lost in candidates:
            given = stand_in_decides(grade, failure, helper, "its own checks fail" if lost else
                                     "as your code uses it here")
            item.funcargs["grade"] = grade  # (each run starts from the first run's: _verify reads what its output was)
            try:
                self.plugin._verify(item, args, given, alone=True)
            except RightGivenHelper as right:
                if right is given and right.verified:  # (else the first run's verdict, which may be a kept case)
                    if kept is None:
                        kept, verified = right, item.funcargs["grade"]
                    else:  # (deeper helpers where ``every``, the exercise's own others else)
                        (kept.also if every else kept.either).append(helper)
                    if lost and not every:
                        break
            except Exception:  # noqa: BLE001 - the run's failure, or its worker's: the first run's verdict stands
                pass
        item.funcargs["grade"] = grade if kept is None else verified
        return kept

    def _named(self, assignment: str, exercise: str) -> tuple[str, ...]:
        """The helpers ``exercise``'s code calls, then those that the exercises its checks run call (``RUNS``): read
        once a grading (the files do not change while it runs)."""
        if (assignment, exercise) not in self.named:
            session = self.plugin.session
            files, modules = session.files_run(assignment), frozenset(a.module_name for a in session.course.assignments)
            named = []
            for reader in (exercise, *RUNS.get(exercise, ())):
                named += [h for h in helpers_named(files, reader, HELPERS, modules) if h not in named and h != exercise]
            self.named[(assignment, exercise)] = tuple(named)
        return self.named[(assignment, exercise)]

    def _assignment_of(self, exercise: str) -> str | None:
        session = self.plugin.session
        owner = next((a.id for a in session.course.assignments if exercise in a.exercises), None)
        return owner if owner in session.copy.sources else None

    def _status(self, assignment: str) -> dict[str, bool]:
        """What this process's grading has settled of each exercise so far: False where it lost points (it stays
        lost), True where it passed every check of an assignment other than ``assignment`` (graded whole before this
        one, in this process: grader.grading.twins); an exercise of ``assignment`` itself that passed its checks so
        far may fail a later one (its half-precision check follows the class's), so it is unknown. Whatever the
        machine's load gives this process to grade, a helper left out for it could have kept nothing: the score
        is the same either way."""
        lost, passed = set(), {}
        for owner, name, outcome in self.plugin.outcomes:
            if outcome.status != "passed":
                lost.add(name)
            elif owner != assignment:
                passed[name] = True
        return {**passed, **dict.fromkeys(lost, False)}

    def _unless_passed(self, assignment: str, named) -> list[tuple[str, bool]]:
        """``named`` but those known to have passed every check of their own (a case kept given one would not hold),
        those that lost points first: (helper, lost)."""
        status = self._status(assignment)
        return [(h, True) for h in named if status.get(h) is False] + [(h, False) for h in named if h not in status]

def _grade(item):
    return (getattr(item, "funcargs", None) or {}).get("grade")


def _exercise_of(item) -> tuple[str, str]:
    return item.get_closest_marker("assignment").args[0], item.get_closest_marker("exercise").args[0]
