"""Word weights for people: ``--soft`` JSON records and heatmaps (Bahdanau et al., Fig. 3)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nmtkit.errors import ConfigError, DataError
from nmtkit.outputs import save_figure

log = logging.getLogger(__name__)

PLOT_FORMATS = ("png", "svg", "pdf")
_CELL_INCHES = 0.3  # one word per 0.3 in keeps 10 pt labels readable at any sentence length


def _check_shape(
    word_weights: np.ndarray, src_words: Sequence[str], tgt_words: Sequence[str]
) -> np.ndarray:
    weights = np.asarray(word_weights, dtype=np.float64)
    if weights.shape != (len(tgt_words), len(src_words)):
        raise ValueError(
            f"word_weights has shape {weights.shape}, "
            f"expected [T_words, S_words] = ({len(tgt_words)}, {len(src_words)})"
        )
    return weights


def soft_record(
    src_words: Sequence[str], tgt_words: Sequence[str], word_weights: np.ndarray
) -> dict[str, Any]:
    """Return a ``--soft`` JSON record: the words and weight rows [T_words, S_words], 4 places."""
    weights = _check_shape(word_weights, src_words, tgt_words)
    return {"src": list(src_words), "tgt": list(tgt_words), "weights": weights.round(4).tolist()}


def plot_heatmap(
    word_weights: np.ndarray,
    *,
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    path: Path,
    title: str | None = None,
) -> None:
    """Draw weights as in Bahdanau et al. (2015), Fig. 3 and write them to ``path`` atomically.

    Source words run along the top, target words down the side; 0 is black and 1 white. The
    format (png, svg, pdf) comes from the suffix; ``title`` goes under the matrix.

    Raises:
        ConfigError: matplotlib is not installed, or the suffix is not a known format.
        DataError: the source or target sentence is empty.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in PLOT_FORMATS:
        raise ConfigError(
            f"cannot plot to {str(path)!r}: unknown image format", hint="use .png, .svg or .pdf"
        )
    weights = _check_shape(word_weights, src_words, tgt_words)
    if weights.size == 0:
        raise DataError("nothing to plot: the source or target sentence is empty", where=str(path))
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        hint = "pip install nmtkit[plot]"
        raise ConfigError("matplotlib is needed for --plot", hint=hint) from None

    num_tgt, num_src = weights.shape
    fig = Figure(figsize=(_CELL_INCHES * num_src, _CELL_INCHES * num_tgt))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=1.0)
    ax = fig.add_subplot()
    ax.imshow(weights, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.xaxis.tick_top()
    ax.set_xticks(range(num_src), labels=list(src_words), rotation=90, fontsize=10)
    ax.set_yticks(range(num_tgt), labels=list(tgt_words), fontsize=10)
    if title:
        ax.set_xlabel(title, fontsize=11)
    save_figure(fig, path, fmt)
    log.debug("wrote attention heatmap %s", path)
