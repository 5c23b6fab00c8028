"""The second course's pictures (course.toml's ``[course] figures``): a wrong layer_norm or gelu is drawn
beside the right output on four tokens of six features, token (row) by feature (column)."""
from __future__ import annotations

from grader.authoring import Picture

TOKENS = ((1.0, 2.0, 3.0, 4.0, 5.0, 6.0), (0.5, -0.5, 0.5, -0.5, 0.5, -0.5),
          (2.0, 2.0, 2.0, 2.0, 2.0, 8.0), (-3.0, -2.0, -1.0, 0.0, 1.0, 2.0))


def tokens():
    import torch

    return torch.tensor(TOKENS)  # [4, 6]


def _rows():
    return [f"token {i}" for i in range(len(TOKENS))]


def _cols():
    return [f"feature {j}" for j in range(len(TOKENS[0]))]


def _unit_affine():
    import torch

    return tokens(), torch.ones(6), torch.zeros(6)  # x [4, 6], weight [6], bias [6]


FIGURES = {
    ("01_normalisation", "layer_norm"): Picture(
        "layer_norm(x, weight=ones(6), bias=zeros(6)): each token's features, normalised",
        _unit_affine, _rows, _cols, kind="values"),
    ("01_normalisation", "gelu"): Picture("gelu(x): each entry activated", lambda: (tokens(),), _rows, _cols,
                                          kind="values"),
}
