"""preprocess(): parallel corpora -> cleaned, prepared, SentencePiece-encoded, binarized data dir.

The data dir is built in ``destdir.tmp-<random>`` beside ``destdir`` and renamed into place at
the end, so a failure leaves nothing half-written. ``manifest.json`` describes everything in it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import Progress, TaskID
from rich.table import Table

from nmtkit.console import progress
from nmtkit.data.datadir import (
    CorpusFile,
    build_manifest,
    check_destdir,
    sampled_name,
    staged_dir,
    write_manifest,
)
from nmtkit.data.datadir import load_manifest as load_manifest  # re-exported: part of this API
from nmtkit.data.datadir import load_pipeline as load_pipeline  # re-exported: part of this API
from nmtkit.data.dataset import count_id, dataset_info, write_dataset
from nmtkit.data.text import (
    CLEAN_REASONS,
    SPECIAL_PIECES,
    SUBWORD_TYPES,
    UNK_ID,
    CleanSettings,
    TextPipeline,
    TextSettings,
)
from nmtkit.data.trainset import build_train_split, corpus_pairs, model_file, text_lines
from nmtkit.data.workers import ChunkPool, resolve_workers
from nmtkit.errors import ConfigError, unknown_name
from nmtkit.files import check_line_counts, count_lines, resolve_corpus
from nmtkit.outputs import atomic_write

log = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True, kw_only=True, slots=True)
class PreprocessConfig:
    """What ``preprocess`` reads, how it prepares the text, and where it writes.

    Attributes:
        src_lang: source language code; corpora are ``{pref}.{src_lang}`` (or ``.gz``).
        tgt_lang: target language code.
        trainpref: path prefix of the training corpus, e.g. ``corpora/train``.
        validpref: path prefix of the validation corpus (kept whole, never cleaned; a sentence
            over ``clean.max_pieces`` pieces is cut to it).
        testpref: path prefix of the test corpus (kept as the validation corpus is).
        destdir: the data dir to create (replaced only on success).
        text: text preparation before SentencePiece.
        clean: training-pair filters.
        subword: SentencePiece model type, ``bpe`` or ``unigram``.
        vocab_size: SentencePiece vocabulary size (an upper bound on tiny corpora).
        joint: one SentencePiece model for both languages, else one per language.
        trim_target_vocab: give the target side its own model, trimmed to the pieces its
            training sentences use (:mod:`nmtkit.data.target_vocab`), as ``spm.{tgt}.model``:
            a smaller output layer. Off, the target ids are the (joint) model's, which
            ``model.share_embeddings`` needs.
        sampled_segmentations: also write the training pairs this many times more, each
            time with a segmentation sampled by SentencePiece (subword regularization, Kudo
            2018; BPE-dropout, Provilkov et al. 2020), as ``train.sampled{k}.{lang}``; training
            reads one of them an epoch, in turn. 0 writes none.
        sampling_alpha: for those samples, BPE-dropout's probability of skipping a merge (a
            BPE model), or the unigram model's smoothing exponent (a unigram model).
        subword_sample: SentencePiece learns from at most this many training pairs (both
            sides for a joint model), drawn at random with ``seed``; 0 for all of them. A
            corpus of at most this many pairs is used whole, in order.
        skip_invalid: drop pairs with invalid UTF-8 (and count them) instead of failing.
        seed: the seed of SentencePiece and of its sample of pairs.

    Raises:
        ConfigError: unusable or equal language codes, an unknown subword type, a
            vocabulary too small for the special pieces, a negative ``subword_sample`` or
            ``sampled_segmentations``, or a ``sampling_alpha`` outside (0, 1].
    """

    src_lang: str
    tgt_lang: str
    trainpref: str
    validpref: str | None = None
    testpref: str | None = None
    destdir: str
    text: TextSettings = field(default_factory=TextSettings)
    clean: CleanSettings = field(default_factory=CleanSettings)
    subword: str = "bpe"
    vocab_size: int = 8000
    joint: bool = True
    trim_target_vocab: bool = True
    sampled_segmentations: int = 0
    sampling_alpha: float = 0.1
    subword_sample: int = 1_000_000
    skip_invalid: bool = False
    seed: int = 1

    def __post_init__(self) -> None:
        for key in ("src_lang", "tgt_lang"):
            lang = getattr(self, key)
            if not lang or any(ch in lang for ch in "/\\. ") or lang == "raw":
                raise ConfigError(f"not a usable language code: {lang!r}", where=key)
        if self.src_lang == self.tgt_lang:
            raise ConfigError("src_lang and tgt_lang must differ", where="tgt_lang")
        if self.subword not in SUBWORD_TYPES:
            raise unknown_name("subword model", self.subword, SUBWORD_TYPES, where="subword")
        if self.vocab_size <= len(SPECIAL_PIECES):
            raise ConfigError(
                f"vocab_size must exceed {len(SPECIAL_PIECES)} (the special pieces)",
                where="vocab_size",
            )
        if self.sampled_segmentations < 0:
            raise ConfigError(
                "sampled_segmentations must be 0 (none) or more", where="sampled_segmentations"
            )
        if not 0 < self.sampling_alpha <= 1:
            raise ConfigError(
                f"sampling_alpha must be in (0, 1], got {self.sampling_alpha}",
                where="sampling_alpha",
            )
        if self.subword_sample < 0:
            raise ConfigError(
                "subword_sample must be 0 (every pair) or more", where="subword_sample"
            )

    @property
    def langs(self) -> tuple[str, str]:
        """(src_lang, tgt_lang)."""
        return (self.src_lang, self.tgt_lang)


@dataclass(frozen=True, kw_only=True, slots=True)
class SplitSummary:
    """Counts for one split; token counts exclude EOS.

    Attributes:
        num_lines: pairs read from the corpus.
        num_sentences: pairs written (after cleaning for train, after dropping invalid UTF-8).
        num_tokens: subword tokens per language.
        num_unk: UNK tokens per language.
        num_cut: sentences cut to ``clean.max_pieces`` pieces, per language (validation and
            test only: a training pair over it is dropped, and counted in ``clean_counts``).
    """

    name: str
    num_lines: int
    num_sentences: int
    num_tokens: dict[str, int]
    num_unk: dict[str, int]
    num_cut: dict[str, int]


@dataclass(frozen=True, kw_only=True, slots=True)
class PreprocessSummary:
    """What ``preprocess`` wrote: per-split counts, cleaning counts by reason, vocabulary sizes,
    the most pieces a sentence may have (``clean.max_pieces``), and how many sampled
    segmentations of the training pairs it wrote beside the one-best."""

    destdir: Path
    src_lang: str
    tgt_lang: str
    splits: tuple[SplitSummary, ...]
    clean_counts: dict[str, int]
    vocab_sizes: dict[str, int]
    seconds: float
    max_pieces: int
    sampled_segmentations: int = 0


def preprocess(config: PreprocessConfig, *, workers: int = 1) -> PreprocessSummary:
    """Clean, prepare, segment and binarize parallel corpora into ``config.destdir``.

    Args:
        workers: processes that prepare, clean and encode the training text, 0 for one per
            CPU core. The data dir is the same, byte for byte, whatever their number. Workers
            are spawned and import the main script again: guard a script's call with
            ``if __name__ == "__main__":``.

    Raises:
        ConfigError: a ``vocab_size`` below the number of distinct characters, or a negative
            ``workers``.
        DataError: a missing corpus, parallel files of different lengths, invalid UTF-8,
            no training pairs left after cleaning (by words or by pieces), or a ``destdir``
            that is not a data dir.
    """
    start = time.perf_counter()
    num_workers = resolve_workers(workers)
    corpora = _resolve_corpora(config)
    destdir = Path(config.destdir)
    check_destdir(destdir, [c.path for pair in corpora.values() for c in pair])
    if num_workers > 1:
        log.info("preparing and encoding train in %d worker processes", num_workers)
    with staged_dir(destdir) as tmp, ChunkPool(num_workers) as pool, progress() as bar:
        clean_counts, models = build_train_split(config, corpora["train"], tmp, bar, pool)
        pipelines = {lang: TextPipeline(config.text, lang, models[lang]) for lang in config.langs}
        splits = [_summarize(tmp, "train", corpora["train"][0].num_lines, config.langs)]
        for split in SPLITS[1:]:
            if split in corpora:
                splits.append(
                    _preprocess_heldout(config, split, corpora[split], pipelines, tmp, bar)
                )
        vocab_sizes = {lang: pipelines[lang].vocab_size for lang in config.langs}
        sampled = [sampled_name(k) for k in range(1, config.sampled_segmentations + 1)]
        manifest = build_manifest(
            config=dataclasses.asdict(config),
            corpora=corpora,
            splits={s.name: dataclasses.asdict(s) for s in splits},
            clean_counts=clean_counts,
            vocab_sizes=vocab_sizes,
            spm_models={lang: model_file(config, lang) for lang in config.langs},
            dtypes={
                f"{name}.{lang}": _dtype(tmp, name, lang)
                for name in [*(s.name for s in splits), *sampled]
                for lang in config.langs
            },
            sampled=sampled,
        )
        write_manifest(tmp, manifest)
    summary = PreprocessSummary(
        destdir=destdir,
        src_lang=config.src_lang,
        tgt_lang=config.tgt_lang,
        splits=tuple(splits),
        clean_counts=clean_counts,
        vocab_sizes=vocab_sizes,
        seconds=time.perf_counter() - start,
        max_pieces=config.clean.max_pieces,
        sampled_segmentations=config.sampled_segmentations,
    )
    log.info("wrote %s in %.1f s", destdir, summary.seconds)
    return summary


def _resolve_corpora(config: PreprocessConfig) -> dict[str, tuple[CorpusFile, CorpusFile]]:
    """Find ``{pref}.{lang}[.gz]`` for every split and check that both sides have as many lines."""
    prefs = {"train": config.trainpref, "valid": config.validpref, "test": config.testpref}
    counted: dict[str, tuple[Path, Path, int]] = {}
    corpora: dict[str, tuple[CorpusFile, CorpusFile]] = {}
    for split, pref in prefs.items():
        if pref is None:
            continue
        src_path, tgt_path = (resolve_corpus(f"{pref}.{lang}") for lang in config.langs)
        num_src = count_lines(src_path)
        check_line_counts(
            src_path,
            num_src,
            tgt_path,
            count_lines(tgt_path),
            where=f"{split} corpus",
            hint="each line of one side must translate the same line of the other",
        )
        counted[split] = (src_path, tgt_path, num_src)
    for split, (src_path, tgt_path, num_lines) in counted.items():
        corpora[split] = (
            CorpusFile.of(src_path, num_lines=num_lines),
            CorpusFile.of(tgt_path, num_lines=num_lines),
        )
    log.info("found %s", ", ".join(f"{s} ({c[0].num_lines} lines)" for s, c in corpora.items()))
    return corpora


def _preprocess_heldout(
    config: PreprocessConfig,
    split: str,
    corpora: tuple[CorpusFile, CorpusFile],
    pipelines: dict[str, TextPipeline],
    tmp: Path,
    bar: Progress,
) -> SplitSummary:
    """Keep a validation or test split whole: write its raw lines, then binarize them, each
    sentence cut to ``clean.max_pieces`` pieces (the raw lines stay whole, for BLEU)."""
    raw = {lang: tmp / f"{split}.raw.{lang}" for lang in config.langs}
    task = bar.add_task(f"read {split}", total=corpora[0].num_lines)
    with (
        atomic_write(raw[config.src_lang]) as src_out,
        atomic_write(raw[config.tgt_lang]) as tgt_out,
    ):
        for src, tgt in corpus_pairs(corpora, config.skip_invalid):
            bar.advance(task)
            if src is not None and tgt is not None:
                src_out.write(f"{src}\n")
                tgt_out.write(f"{tgt}\n")
    num_cut: dict[str, int] = {}
    for lang in config.langs:
        task = bar.add_task(f"encode {split}.{lang}", total=corpora[0].num_lines)
        cut = _Cut(config.clean.max_pieces)
        encoded = cut(_encode_raw(pipelines[lang], raw[lang], bar, task))
        write_dataset(tmp / f"{split}.{lang}", encoded)
        num_cut[lang] = cut.count
    summary = _summarize(tmp, split, corpora[0].num_lines, config.langs, num_cut=num_cut)
    if summary.num_sentences < summary.num_lines:
        log.warning(
            "%s: dropped %d pairs with invalid UTF-8",
            split,
            summary.num_lines - summary.num_sentences,
        )
    for lang, count in num_cut.items():
        if count:
            log.warning(
                "%s.%s: cut %d sentences to %d pieces (--max-pieces)",
                split,
                lang,
                count,
                config.clean.max_pieces,
            )
    log.info("binarized %s: %d sentences", split, summary.num_sentences)
    return summary


def _encode_raw(
    pipeline: TextPipeline, path: Path, bar: Progress, task: TaskID
) -> Iterator[list[int]]:
    for line in text_lines(path):
        yield pipeline.encode(line)
        bar.advance(task)


class _Cut:
    """Cut id sequences to ``limit`` ids, counting the sequences cut."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def __call__(self, sequences: Iterable[list[int]]) -> Iterator[list[int]]:
        for ids in sequences:
            if len(ids) > self.limit:
                self.count += 1
                ids = ids[: self.limit]
            yield ids


def _summarize(
    tmp: Path,
    split: str,
    num_lines: int,
    langs: tuple[str, str],
    *,
    num_cut: dict[str, int] | None = None,
) -> SplitSummary:
    # Read in chunks, not through TokenDataset's memory maps, whose pages would stay resident.
    infos = {lang: dataset_info(tmp / f"{split}.{lang}") for lang in langs}
    return SplitSummary(
        name=split,
        num_lines=num_lines,
        num_sentences=infos[langs[0]].num_sentences,
        num_tokens={lang: info.num_tokens for lang, info in infos.items()},
        num_unk={lang: count_id(tmp / f"{split}.{lang}", UNK_ID) for lang in langs},
        num_cut=num_cut or dict.fromkeys(langs, 0),
    )


def _dtype(tmp: Path, split: str, lang: str) -> str:
    return str(dataset_info(tmp / f"{split}.{lang}").dtype)


def summary_table(summary: PreprocessSummary) -> Table:
    """Render a preprocess summary as a rich table: one row per split, cleaning in the caption."""
    src, tgt = summary.src_lang, summary.tgt_lang
    table = Table(title=f"nmtkit data: {summary.destdir}")
    for header in ("split", "lines", "sentences", f"{src} tokens", f"{tgt} tokens", "unk %"):
        table.add_column(header, justify="left" if header == "split" else "right")
    for split in summary.splits:
        tokens = sum(split.num_tokens.values())
        unk = 100 * sum(split.num_unk.values()) / max(tokens, 1)
        table.add_row(
            split.name,
            f"{split.num_lines:,}",
            f"{split.num_sentences:,}",
            f"{split.num_tokens[src]:,}",
            f"{split.num_tokens[tgt]:,}",
            f"{unk:.2f}",
        )
    dropped = ", ".join(
        f"{reason} {summary.clean_counts[reason]:,}"
        for reason in CLEAN_REASONS
        if summary.clean_counts.get(reason)
    )
    cut = "".join(
        f"; {split.name} cut to {summary.max_pieces:,} pieces: "
        + ", ".join(f"{lang} {n:,}" for lang, n in split.num_cut.items() if n)
        for split in summary.splits
        if any(split.num_cut.values())
    )
    vocab = ", ".join(f"{lang} {size:,}" for lang, size in summary.vocab_sizes.items())
    sampled = (
        f"; {summary.sampled_segmentations} sampled segmentations of train"
        if summary.sampled_segmentations
        else ""
    )
    table.caption = f"train dropped: {dropped or 'none'}{cut}; vocabulary: {vocab}{sampled}"
    return table
