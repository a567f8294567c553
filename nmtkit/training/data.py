"""What training reads from a data directory (token datasets, references, the vocabulary) and
the examples of each epoch: every pair, plus joined pairs (:mod:`nmtkit.data.concat`), cut into
the epoch's batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmtkit.checkpoint import Vocabulary
from nmtkit.config import TrainConfig
from nmtkit.data.batching import batch_by_tokens, collate, epoch_batches
from nmtkit.data.concat import ConcatPolicy, joined_lengths
from nmtkit.data.datadir import (
    UNRECORDED_MAX_PIECES,
    load_manifest,
    load_pipeline,
    max_pieces,
    sampled_names,
)
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
class EpochExamples:
    """The training examples of one epoch: pairs 0..N-1 of ``split``, then example N + m, the
    pairs of ``joined[m]`` joined end to end on both sides (one EOS, at the very end).

    Attributes:
        joined: the joined examples' pair indices, [M, P], -1 padded.
        src_lengths, tgt_lengths: every example's length in pieces (EOS not counted), [N + M].
    """

    split: ParallelSplit
    joined: np.ndarray
    src_lengths: np.ndarray
    tgt_lengths: np.ndarray

    @classmethod
    def of(
        cls, split: ParallelSplit, concat: ConcatPolicy, *, seed: int, epoch: int
    ) -> EpochExamples:
        """The epoch's examples, a pure function of (seed, epoch); with no concatenation they
        are the pairs alone. The joined examples draw from a stream of their own, so that
        turning concatenation on leaves the pairs' batching generator untouched."""
        joined = concat.joined(len(split), np.random.default_rng([seed, epoch, 1]))
        src, tgt = split.src.lengths, split.tgt.lengths
        if len(joined):
            src = np.concatenate([src, joined_lengths(src, joined)])
            tgt = np.concatenate([tgt, joined_lengths(tgt, joined)])
        return cls(split=split, joined=joined, src_lengths=src, tgt_lengths=tgt)

    def __len__(self) -> int:
        return len(self.src_lengths)

    def batches(
        self, *, max_tokens: int, max_sentences: int | None, seed: int, epoch: int
    ) -> list[np.ndarray]:
        """The epoch's shuffled token-budget batches of example indices."""
        return epoch_batches(
            self.src_lengths,
            self.tgt_lengths,
            max_tokens=max_tokens,
            max_sentences=max_sentences,
            seed=seed,
            epoch=epoch,
        )

    def target_tokens(self, indices: np.ndarray) -> int:
        """Target pieces of the examples at ``indices``, one EOS each included."""
        return int(self.tgt_lengths[indices].sum()) + len(indices)

    def batch(self, indices: np.ndarray) -> Batch:
        """Collate the examples at ``indices``."""
        num_pairs = len(self.split)
        if len(self.joined) == 0 or int(indices.max()) < num_pairs:
            return self.split.batch(indices)
        src, tgt = [], []
        for index in indices.tolist():
            pairs = [index] if index < num_pairs else self.joined[index - num_pairs]
            pairs = [int(i) for i in pairs if i >= 0]
            src.append(np.concatenate([self.split.src[i] for i in pairs]))
            tgt.append(np.concatenate([self.split.tgt[i] for i in pairs]))
        return collate(src, tgt, indices.tolist())


def concat_policy(config: TrainConfig) -> ConcatPolicy:
    """The concatenation augmentation that ``train.concat_*`` ask for."""
    return ConcatPolicy(
        rate=config.concat_rate, max_parts=config.concat_max, mode=config.concat_mode
    )


class Epochs:
    """The examples and batches of one epoch at a time, cut once: the progress total, the loop
    and the closing epoch count all ask, and on millions of sentences each cut takes seconds.
    Both are pure functions of (seed, epoch).

    Epoch ``e`` (from 1) reads ``splits[(e - 1) % len(splits)]``: the training pairs in one
    segmentation, or in turn in each of several sampled ones (subword regularization).
    """

    def __init__(self, splits: Sequence[ParallelSplit], config: TrainConfig) -> None:
        if not splits:
            raise ValueError("Epochs needs at least one split")
        self.splits, self.config = tuple(splits), config
        self._cut: tuple[int, EpochExamples, list[np.ndarray]] | None = None

    def split(self, epoch: int) -> ParallelSplit:
        """The segmentation of the training pairs that ``epoch`` reads."""
        return self.splits[(epoch - 1) % len(self.splits)]

    def examples(self, epoch: int) -> EpochExamples:
        """The epoch's examples: pairs and joined pairs."""
        return self._of(epoch)[0]

    def batches(self, epoch: int) -> list[np.ndarray]:
        """The epoch's shuffled batches of example indices."""
        return self._of(epoch)[1]

    def _of(self, epoch: int) -> tuple[EpochExamples, list[np.ndarray]]:
        if self._cut is None or self._cut[0] != epoch:
            cfg = self.config
            examples = EpochExamples.of(
                self.split(epoch), concat_policy(cfg), seed=cfg.seed, epoch=epoch
            )
            batches = examples.batches(
                max_tokens=cfg.max_tokens,
                max_sentences=cfg.max_sentences,
                seed=cfg.seed,
                epoch=epoch,
            )
            self._cut = (epoch, examples, batches)
        return self._cut[1], self._cut[2]


@dataclass(frozen=True, kw_only=True)
class TrainingData:
    """The training and validation splits plus what a checkpoint needs to translate.

    Attributes:
        train: the training pairs, in the one-best segmentation.
        train_sampled: the same pairs in each sampled segmentation the data dir holds
            (``preprocess --sampled-segmentations``), in order; () when it holds none.
    """

    train: ParallelSplit
    train_sampled: tuple[ParallelSplit, ...] = ()
    valid: ParallelSplit | None
    valid_refs: list[str]
    vocab: Vocabulary
    src_text: TextPipeline
    tgt_text: TextPipeline

    def epoch_splits(self, *, sampled: bool) -> tuple[ParallelSplit, ...]:
        """What the epochs read in turn: the sampled segmentations if ``sampled`` and the data
        dir has them, else the one-best."""
        return self.train_sampled if sampled and self.train_sampled else (self.train,)

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
        sampled = tuple(split(name) for name in sampled_names(manifest))
        for sample in sampled:
            if len(sample) != len(train):
                raise DataError(
                    f"a sampled segmentation holds {len(sample):,} training pairs, "
                    f"not {len(train):,}",
                    where=str(data_dir),
                    hint="rerun nmtkit preprocess",
                )
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
            train_sampled=sampled,
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
