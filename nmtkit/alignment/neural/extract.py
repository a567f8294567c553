"""Links from the two directions' alignment posteriors.

- ``soft`` (the default): link i-j when the mean of p_fwd(a_j = i) and p_rev(a_i = j) is at
  least the threshold. At 0.5 a link is one the two models, on average, think more likely than
  not; the threshold is a probability, so it is set without gold links.
- ``forward`` / ``reverse``: each target (source) word to its most probable source (target)
  word, none when NULL is most probable.
- ``intersection``, ``union``, ``grow-diag``, ``grow-diag-final``, ``grow-diag-final-and``: the
  usual heuristics over the forward and reverse links.
"""

from __future__ import annotations

import numpy as np

from nmtkit.alignment.links import Link
from nmtkit.alignment.symmetrize import SYMMETRIZERS
from nmtkit.errors import unknown_name

DEFAULT_METHOD = "soft"
DEFAULT_THRESHOLD = 0.5
METHODS = ("soft", "forward", "reverse", *SYMMETRIZERS)


def check_method(method: str) -> None:
    """Raise ConfigError, listing the methods and naming the closest, for an unknown one."""
    if method not in METHODS:
        raise unknown_name("alignment method", method, METHODS)


def directional_links(posteriors: np.ndarray) -> list[tuple[int, int]]:
    """(word, its most probable partner) for each word whose best partner is not NULL.

    Args:
        posteriors: [words, partners + 1], NULL in column 0.
    """
    best = posteriors.argmax(axis=1)
    return [(word, int(partner) - 1) for word, partner in enumerate(best) if partner > 0]


def soft_links(forward: np.ndarray, reverse: np.ndarray, threshold: float) -> list[Link]:
    """i-j where (p_fwd(a_j = i) + p_rev(a_i = j)) / 2 >= threshold.

    Args:
        forward: [J, I + 1]; reverse: [I, J + 1]; NULL in column 0.
    """
    mean = word_weights(forward, reverse).T  # [I, J]
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(mean >= threshold), strict=True)]


def links(
    forward: np.ndarray,
    reverse: np.ndarray,
    *,
    method: str = DEFAULT_METHOD,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Link]:
    """One pair's source-target links by ``method`` (see the module docstring).

    Raises:
        ConfigError: an unknown method.
    """
    check_method(method)
    if method == "soft":
        return soft_links(forward, reverse, threshold)
    src_tgt = [(i, j) for j, i in directional_links(forward)]
    tgt_src = directional_links(reverse)
    if method == "forward":
        return sorted(src_tgt)
    if method == "reverse":
        return sorted(tgt_src)
    return SYMMETRIZERS[method](src_tgt, tgt_src)


def word_weights(forward: np.ndarray, reverse: np.ndarray) -> np.ndarray:
    """The mean posterior of each link, [J, I]: what the heatmaps draw."""
    return (forward[:, 1:] + reverse[:, 1:].T) / 2
