"""nmtkit: neural machine translation with RNNsearch (Bahdanau, Cho and Bengio, 2015).

The public API, imported lazily so that ``nmtkit --version`` stays fast::

    from nmtkit import preprocess, train, Translator, load_model, score, align_files
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = {
    "preprocess": "nmtkit.data.preprocess",
    "PreprocessConfig": "nmtkit.data.preprocess",
    "train": "nmtkit.training.trainer",
    "load_config": "nmtkit.config",
    "Translator": "nmtkit.translation.translator",
    "open_translator": "nmtkit.translation.loading",
    "load_model": "nmtkit.checkpoint",
    "score": "nmtkit.scoring.metrics",
    "score_files": "nmtkit.scoring.metrics",
    "align_corpus": "nmtkit.alignment.attention_links",
    "align_files": "nmtkit.alignment.file_alignment",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'nmtkit' has no attribute {name!r}")
