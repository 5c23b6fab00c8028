"""What PyTorch's shape errors say, read once for every suite: the sizes that met, and where.

Three messages name sizes a diagnosis can compare with what it knows of the case (a number of heads
against a number of tokens, a block against the rest of a row):

- ``broadcast``: "The size of tensor a (4) must match the size of tensor b (10) at non-singleton
  dimension 1" (an elementwise operation); ``sizes`` is (a, b), ``dim`` the dimension (None where the
  message names none);
- ``cat``: "Sizes of tensors must match except in dimension 1. Expected size 16 but got size 4 for
  tensor number 1 in the list" (torch.cat, torch.stack); ``sizes`` is (expected, got), ``dim`` the
  dimension they may differ in;
- ``matmul``: "mat1 and mat2 shapes cannot be multiplied (6x4 and 3x2)"; ``sizes`` is the four numbers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERNS = {
    "broadcast": re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
                            r"(?: at non-singleton dimension (-?\d+))?"),
    "cat": re.compile(r"except in dimension (-?\d+)\. Expected size (\d+) but got size (\d+)"),
    "matmul": re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)"),
}


@dataclass(frozen=True)
class ShapeMismatch:
    kind: str
    sizes: tuple[int, ...]
    dim: int | None = None


def shape_mismatch(text: str, kind: str) -> ShapeMismatch | None:
    """The first shape error of ``kind`` (``"broadcast"``, ``"cat"`` or ``"matmul"``) that ``text`` (an
    error message, or its last line) states, or None."""
    found = _PATTERNS[kind].search(text)
    if found is None:
        return None
    if kind == "broadcast":
        return ShapeMismatch(kind, (int(found[1]), int(found[2])), None if found[3] is None else int(found[3]))
    if kind == "cat":
        return ShapeMismatch(kind, (int(found[2]), int(found[3])), int(found[1]))
    return ShapeMismatch(kind, tuple(int(n) for n in found.groups()))
