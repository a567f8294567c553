"""What training reads from a data directory: token datasets, references and the vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmtkit.checkpoint import Vocabulary
from nmtkit.data.batching import batch_by_tokens, collate
from nmtkit.data.datadir import UNRECORDED_MAX_PIECES, load_manifest, load_pipeline, max_pieces
from nmtkit.data.dataset import TokenDataset
from nmtkit.data.text import TextPipeline
from nmtkit.errors import DataError
from nmtkit.files import read_lines
from nmtkit.registry import Batch


@dataclass(frozen=True, kw_only=True)
class ParallelSplit:
    """One split of a data directory: source and target token datasets."""

    src: TokenDataset
    tgt: TokenDataset

    def __len__(self) -> int:
        return len(self.src)

    def batch(self, indices: np.ndarray) -> Batch:
        """Collate the sentences at ``indices``."""
        return collate(
            [self.src[i] for i in indices], [self.tgt[i] for i in indices], indices.tolist()
        )

    def batches(self, *, max_tokens: int, max_sentences: int | None = None) -> list[np.ndarray]:
        """Length-sorted batches in a fixed order (for evaluation)."""
        return batch_by_tokens(
            self.src.lengths,
            self.tgt.lengths,
            max_tokens=max_tokens,
            max_sentences=max_sentences,
        )


@dataclass(frozen=True, kw_only=True)
class TrainingData:
    """The training and validation splits plus what a checkpoint needs to translate."""

    train: ParallelSplit
    valid: ParallelSplit | None
    valid_refs: list[str]
    vocab: Vocabulary
    src_text: TextPipeline
    tgt_text: TextPipeline

    @classmethod
    def load(cls, data_dir: Path) -> TrainingData:
        """Open a data directory written by ``nmtkit preprocess``.

        Raises:
            DataError: not a data directory, its files are missing or corrupt, or a sentence is
                longer than the data dir's own limit (:func:`check_lengths`).
        """
        manifest = load_manifest(data_dir)
        settings = manifest["config"]
        src_lang, tgt_lang = settings["src_lang"], settings["tgt_lang"]
        limit = max_pieces(manifest)

        def split(name: str) -> ParallelSplit:
            pair = ParallelSplit(
                src=TokenDataset(data_dir / f"{name}.{src_lang}"),
                tgt=TokenDataset(data_dir / f"{name}.{tgt_lang}"),
            )
            for dataset in (pair.src, pair.tgt):
                check_lengths(dataset, limit, data_dir=data_dir)
            return pair

        train = split("train")
        if len(train) == 0:
            raise DataError("the training set is empty", where=str(data_dir))
        has_valid = (data_dir / f"valid.raw.{tgt_lang}").is_file()
        src_text = load_pipeline(data_dir, src_lang)
        tgt_text = load_pipeline(data_dir, tgt_lang)
        vocab = Vocabulary(
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            settings=src_text.settings,
            src_spm=src_text.spm_model,
            tgt_spm=tgt_text.spm_model,
            max_src_len=int(train.src.lengths.max()),
        )
        refs = (
            [line or "" for line in read_lines(data_dir / f"valid.raw.{tgt_lang}")]
            if has_valid
            else []
        )
        return cls(
            src_text=src_text,
            tgt_text=tgt_text,
            train=train,
            valid=split("valid") if has_valid else None,
            valid_refs=refs,
            vocab=vocab,
        )


def check_lengths(dataset: TokenDataset, limit: int | None, *, data_dir: Path) -> None:
    """Refuse a dataset holding a sentence of more than ``limit`` pieces, the data dir's own
    limit, or of more than ``UNRECORDED_MAX_PIECES`` when the data dir records none (``limit``
    None: written before ``preprocess`` bounded pieces). The lengths come from the offsets, so
    nothing but the ``.idx`` file is read.

    Raises:
        DataError: naming the data dir, the dataset, the sentence and the limit.
    """
    if len(dataset) == 0:
        return
    longest = int(np.argmax(dataset.lengths))
    length = int(dataset.lengths[longest])
    bound = UNRECORDED_MAX_PIECES if limit is None else limit
    if length <= bound:
        return
    whose = (
        f"this data dir's limit of {bound}"
        if limit is not None
        else f"{bound}, the most a data dir that records no --max-pieces may hold"
    )
    raise DataError(
        f"sentence {longest + 1} of {dataset.prefix.name} has {length:,} pieces, over {whose}",
        where=str(data_dir),
        hint="rerun nmtkit preprocess: it drops longer training pairs (--max-pieces)",
    )
