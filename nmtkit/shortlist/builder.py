"""A model directory's vocabulary shortlist (``shortlist.npz``): built by IBM Model 1 from the
training pairs of the model's data dir (``nmtkit shortlist``), and opened for
``translate --shortlist``."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from nmtkit.checkpoint import (
    SHORTLIST,
    LoadedModel,
    load_model,
    resolve_checkpoint,
    vocabulary_fingerprint,
)
from nmtkit.data.datadir import load_manifest, load_pipeline
from nmtkit.data.dataset import TokenDataset
from nmtkit.errors import ConfigError, DataError
from nmtkit.shortlist.ibm1 import DEFAULT_ITERATIONS, DEFAULT_MAX_PAIRS, train_ibm1
from nmtkit.shortlist.table import Shortlist

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 100  # target pieces kept per source piece (Marian: --shortlist lex 100 100)
DEFAULT_FREQUENT = 100  # most frequent target pieces, candidates of every batch


@dataclass(frozen=True, kw_only=True, slots=True)
class ShortlistSummary:
    """What :func:`build_shortlist` wrote.

    Attributes:
        num_seen: source pieces with entries (the others make a batch use the whole vocabulary).
        mean_entries: target pieces per seen source piece (at most ``top_k``).
    """

    path: Path
    num_pairs: int
    num_seen: int
    mean_entries: float
    num_frequent: int
    num_bytes: int
    seconds: float


def build_shortlist(
    data_dir: Path,
    model: str | Path,
    *,
    top_k: int = DEFAULT_TOP_K,
    frequent: int = DEFAULT_FREQUENT,
    iterations: int = DEFAULT_ITERATIONS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    seed: int = 1,
) -> ShortlistSummary:
    """Learn IBM Model 1 from a seeded sample of ``data_dir``'s training pairs (at most
    ``max_pairs``), keep each source piece's ``top_k`` most probable target pieces and the
    ``frequent`` most frequent target pieces, and write them as ``shortlist.npz`` beside the
    model's checkpoint.

    Args:
        model: a model directory or a checkpoint file.

    Raises:
        ConfigError: ``top_k``, ``iterations`` or ``max_pairs`` below 1, or ``frequent`` below 0.
        CheckpointError: no usable checkpoint at ``model``.
        DataError: ``data_dir`` is not a data dir, or its languages or SentencePiece models are
            not the model's.
    """
    if top_k < 1:
        raise ConfigError(f"--top-k must be at least 1, got {top_k}")
    if frequent < 0:
        raise ConfigError(f"--frequent must be 0 or more, got {frequent}")
    start = time.perf_counter()
    checkpoint = resolve_checkpoint(model)
    vocab = load_model(checkpoint).vocab
    manifest = load_manifest(data_dir)
    src_lang, tgt_lang = manifest["src_lang"], manifest["tgt_lang"]
    src_text, tgt_text = load_pipeline(data_dir, src_lang), load_pipeline(data_dir, tgt_lang)
    fingerprint = vocabulary_fingerprint(src_text.spm_model, tgt_text.spm_model)
    if (src_lang, tgt_lang) != (vocab.src_lang, vocab.tgt_lang) or fingerprint != vocab.fingerprint:
        raise DataError(
            f"its vocabulary ({src_lang}-{tgt_lang}) is not the one of the model {checkpoint} "
            f"({vocab.src_lang}-{vocab.tgt_lang})",
            where=str(data_dir),
            hint="give the data dir the model was trained on",
        )
    shortlist = learn_shortlist(
        TokenDataset(Path(data_dir) / f"train.{src_lang}"),
        TokenDataset(Path(data_dir) / f"train.{tgt_lang}"),
        src_vocab_size=src_text.vocab_size,
        tgt_vocab_size=tgt_text.vocab_size,
        fingerprint=fingerprint,
        top_k=top_k,
        frequent=frequent,
        iterations=iterations,
        max_pairs=max_pairs,
        seed=seed,
    )
    path = checkpoint.parent / SHORTLIST
    shortlist.save(path)
    offsets = shortlist.offsets
    num_seen = int((offsets[1:] > offsets[:-1]).sum())
    return ShortlistSummary(
        path=path,
        num_pairs=shortlist.num_pairs,
        num_seen=num_seen,
        mean_entries=shortlist.targets.size / max(num_seen, 1),
        num_frequent=int(shortlist.frequent.size),
        num_bytes=path.stat().st_size,
        seconds=time.perf_counter() - start,
    )


def learn_shortlist(
    src: TokenDataset,
    tgt: TokenDataset,
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    fingerprint: str,
    top_k: int = DEFAULT_TOP_K,
    frequent: int = DEFAULT_FREQUENT,
    iterations: int = DEFAULT_ITERATIONS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    seed: int = 1,
) -> Shortlist:
    """The shortlist of the training pairs (``src[i]``, ``tgt[i]``) for the vocabulary
    ``fingerprint``: IBM Model 1 (:func:`~nmtkit.shortlist.ibm1.train_ibm1`), each source
    piece's ``top_k`` most probable target pieces and the ``frequent`` most frequent ones.

    Raises:
        ConfigError: ``iterations`` or ``max_pairs`` below 1.
        DataError: the datasets differ in length, or hold no pair with words on both sides.
    """
    table = train_ibm1(
        src,
        tgt,
        src_vocab_size=src_vocab_size,
        tgt_vocab_size=tgt_vocab_size,
        iterations=iterations,
        max_pairs=max_pairs,
        seed=seed,
    )
    offsets, targets = table.best(top_k)
    return Shortlist(
        offsets=offsets,
        targets=targets,
        frequent=table.most_frequent(frequent),
        tgt_vocab_size=tgt_vocab_size,
        fingerprint=fingerprint,
        top_k=top_k,
        num_pairs=table.num_pairs,
    )


def open_shortlist(loaded: LoadedModel) -> Shortlist:
    """The shortlist in ``loaded``'s model directory, checked against its vocabulary.

    The models of an ensemble share ``loaded``'s vocabulary, and so its shortlist; every
    decoder takes one (:meth:`nmtkit.registry.Decoder.shortlist_step`).

    Raises:
        DataError: there is none (the hint says how to build it), it is damaged, or it was
            built for another vocabulary.
    """
    model_dir = loaded.path.parent
    path = model_dir / SHORTLIST
    if not path.is_file():
        raise DataError(
            f"no {SHORTLIST} in this model directory, so no --shortlist",
            where=str(model_dir),
            hint=f"build it with: nmtkit shortlist DATA_DIR -m {model_dir}",
        )
    return Shortlist.load(path, fingerprint=loaded.vocab.fingerprint)
