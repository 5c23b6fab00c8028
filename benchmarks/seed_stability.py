"""One submission, one verdict: every corpus case (tests/corpus mistakes, unnamed, correct and the blind
learner's attempts and final versions, and any
folder given with --extra, laid out the same way) graded with the real grader on N seeds. Prints, for
each case, the spread (max - min) of its assignment score across seeds as a % of the assignment's
points, the worst spread, and each case whose named misconception ids differ between seeds (which
seeds gave which). Exit 1 if a spread exceeds 1% of the assignment's points or any names differ.

corpus.grade_all grades several cases in one copy of an assignment (cases that cannot affect each
other); a case's assignment score is the points of its copy less the points lost on the exercises of
the other cases there (each one's own exercise, and those that use it, corpus.USES), as if it were
graded alone; its names are those of the exercises left to it.

    python benchmarks/seed_stability.py [--seeds 20] [--first-seed 1] [--only PREFIX[,PREFIX...]] [--jobs 1]
                                        [--extra DIR ...] [--save OUT.json] [--against EARLIER.json]

--save writes every case's verdict on every seed (its score and names); --against reads such a file (of another
checkout, say) and prints each case whose verdict on a seed of both differs, exiting 1 if any does: a change that
must leave every corpus figure alone is checked so.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402


def entries_of(extra: list[Path], only: str) -> list:
    folders = [ROOT / "tests" / "corpus", *extra]
    found = [e for f in folders for e in corpus.mistakes(f) + corpus.unnamed(f) + corpus.correct(f)]
    found += corpus.learner("attempts") + corpus.learner("correct")  # the blind learner's (tests/corpus/learner)
    return [e for e in found if e.exercise.startswith(tuple(only.split(",")))]


def owned(exercise: str) -> set[str]:
    """The exercises a mistake in ``exercise`` may cost: its own, and those that use it."""
    return {exercise} | {user for user, used in corpus.USES.items() if exercise in used}


def grade_seeds(seeds: list[int], extra: list[Path], only: str) -> dict:
    """{seed: {case: (assignment score, ((exercise, ids), ...))}}, each case as if graded alone."""
    from grader.config import load_course
    from grader.grading.grader import Grader

    entries, course = entries_of(extra, only), load_course(ROOT)
    grader, out = Grader(course, device="cpu", batch=True), {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for seed in seeds:
                started = time.perf_counter()
                results = corpus.grade_all(entries, course, grader, Path(tmp) / f"seed{seed}", seed=seed)
                runs: dict[int, list] = {}  # the cases graded in one copy of an assignment
                for entry in entries:
                    runs.setdefault(id(results[entry.name][1]), []).append(entry)
                out[seed] = {}
                for entry in entries:
                    others = set().union(*(owned(o.exercise) for o in runs[id(results[entry.name][1])] if o is not entry))
                    mine = [x for x in results[entry.name][1].exercises if x.name not in others]
                    score = sum(x.max_score for x in results[entry.name][1].exercises if x.name in others)
                    score += sum(x.score for x in mine)
                    out[seed][entry.name] = (round(score, 2), tuple((x.name, tuple(x.misconceptions)) for x in mine
                                                                    if x.misconceptions))
                print(f"seed {seed}: {len(entries)} cases in {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        grader.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--only", default="", help="only cases whose exercise starts with this")
    parser.add_argument("--jobs", type=int, default=1, help="grading processes (seeds split between them)")
    parser.add_argument("--extra", type=Path, action="append", default=[])
    parser.add_argument("--save", type=Path, help="write every verdict here (JSON)")
    parser.add_argument("--against", type=Path, help="compare with verdicts --save wrote earlier")
    options = parser.parse_args()
    from grader.config import load_course

    course, started = load_course(ROOT), time.perf_counter()
    entries = entries_of(options.extra, options.only)
    seeds = list(range(options.first_seed, options.first_seed + options.seeds))
    if options.jobs == 1:
        by_seed = grade_seeds(seeds, options.extra, options.only)
    else:
        by_seed = {}
        with ProcessPoolExecutor(max_workers=options.jobs) as pool:
            for part in pool.map(grade_seeds, [seeds[i::options.jobs] for i in range(options.jobs)],
                                 [options.extra] * options.jobs, [options.only] * options.jobs):
                by_seed.update(part)

    if options.save:
        options.save.write_text(json.dumps({str(seed): cases for seed, cases in by_seed.items()}, indent=1))
    changed = _against(options.against, by_seed) if options.against else 0
    rows, moved = [], []
    for entry in entries:
        assignment = course.assignment(corpus.assignment_of(course, entry.exercise))
        points = sum(p for _, p in assignment.points)
        scores = {seed: by_seed[seed][entry.name][0] for seed in seeds}
        spread = 100 * (max(scores.values()) - min(scores.values())) / points
        rows.append((spread, entry, scores))
        names: dict[tuple, list[int]] = {}
        for seed in seeds:
            names.setdefault(by_seed[seed][entry.name][1], []).append(seed)
        if len(names) > 1:
            moved.append((entry, names))

    rows.sort(key=lambda r: (-r[0], r[1].name))
    print(f"\nspread of each case's assignment score over seeds {seeds[0]}..{seeds[-1]} (% of the assignment's points)")
    for spread, entry, scores in rows:
        detail = "" if not spread else "  " + " ".join(f"{s}:{v:g}" for s, v in scores.items())
        print(f"{spread:6.2f}%  {entry.name} [{entry.exercise}]{detail}")
    print(f"\nnames that differ between seeds: {len(moved)} case(s)")
    for entry, names in moved:
        print(f"{entry.name} [{entry.exercise}]")
        for ids, which in names.items():
            said = "; ".join(f"{x}: {', '.join(m)}" for x, m in ids) or "(none)"
            print(f"    seeds {','.join(map(str, which))}: {said}")
    worst = rows[0][0] if rows else 0.0
    over = sum(1 for r in rows if r[0] > 1)
    wall = time.perf_counter() - started
    print(f"\n{len(entries)} cases, {len(seeds)} seeds: worst spread {worst:.2f}% "
          f"({rows[0][1].name if rows else '-'}); {over} case(s) over 1%; {len(moved)} with names that differ")
    print(f"wall time {wall:.0f} s ({wall / max(len(seeds), 1):.1f} s per seed)")
    return 1 if over or moved or changed else 0


def _against(path: Path, by_seed: dict) -> int:
    """How many verdicts differ from those ``path`` holds (cases and seeds in both), each printed."""
    earlier = json.loads(path.read_text())
    same = changed = 0
    for seed, cases in by_seed.items():
        for name, verdict in cases.items():
            then = earlier.get(str(seed), {}).get(name)
            if then is None:
                continue
            now = json.loads(json.dumps(verdict))  # as the file holds it (lists, not tuples)
            if now == then:
                same += 1
            else:
                changed += 1
                print(f"differs: seed {seed} {name}: {then} -> {now}")
    print(f"against {path}: {same} verdicts the same, {changed} differ")
    return changed


if __name__ == "__main__":
    raise SystemExit(main())
