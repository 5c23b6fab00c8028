"""One assignment of a course, as course.toml's ``[[assignments]]`` table gives it (grader/config.py
reads and checks it): its files, its exercises and their points, what each exercise may not call."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Assignment:
    id: str
    title: str
    module: str
    notebook: str
    points: tuple[tuple[str, float], ...]  # (exercise, points), in course order
    # (exercise, the library calls it may not make, in grader.inside.forbidden's words): [assignments.forbidden]
    forbidden: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def exercises(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.points)

    @property
    def max_score(self) -> float:
        return float(sum(p for _, p in self.points))

    @property
    def module_name(self) -> str:
        return Path(self.module).stem

    def points_for(self, exercise: str) -> float:
        return dict(self.points)[exercise]
