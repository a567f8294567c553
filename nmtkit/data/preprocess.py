"""preprocess(): parallel corpora -> cleaned, prepared, SentencePiece-encoded, binarized data dir.

The data dir is built in ``destdir.tmp-<random>`` beside ``destdir`` and renamed into place at
the end, so a failure leaves nothing half-written. ``manifest.json`` describes everything in it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sentencepiece as spm
from rich.progress import Progress, TaskID
from rich.table import Table

from nmtkit.console import progress
from nmtkit.data.datadir import (
    CorpusFile,
    build_manifest,
    check_destdir,
    spm_model_name,
    staged_dir,
    write_manifest,
)
from nmtkit.data.datadir import load_manifest as load_manifest  # re-exported: part of this API
from nmtkit.data.datadir import load_pipeline as load_pipeline  # re-exported: part of this API
from nmtkit.data.dataset import TokenDataset, bin_path, idx_path, write_dataset
from nmtkit.data.text import (
    CLEAN_REASONS,
    SPECIAL_PIECES,
    SUBWORD_TYPES,
    UNK_ID,
    CleanSettings,
    PairCleaner,
    TextPipeline,
    TextPreparer,
    TextSettings,
    load_sentencepiece,
    train_sentencepiece,
)
from nmtkit.errors import ConfigError, DataError, unknown_name
from nmtkit.files import atomic_write, count_lines, open_text, read_lines, resolve_corpus

log = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")
_ENCODE_CHUNK = 4096  # lines encoded per SentencePiece batch call


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
        skip_invalid: drop pairs with invalid UTF-8 (and count them) instead of failing.
        seed: SentencePiece's random seed.

    Raises:
        ConfigError: unusable or equal language codes, an unknown subword type, or a
            vocabulary too small for the special pieces.
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
    and the most pieces a sentence may have (``clean.max_pieces``)."""

    destdir: Path
    src_lang: str
    tgt_lang: str
    splits: tuple[SplitSummary, ...]
    clean_counts: dict[str, int]
    vocab_sizes: dict[str, int]
    seconds: float
    max_pieces: int


def preprocess(config: PreprocessConfig) -> PreprocessSummary:
    """Clean, prepare, segment and binarize parallel corpora into ``config.destdir``.

    Raises:
        ConfigError: a ``vocab_size`` below the number of distinct characters.
        DataError: a missing corpus, parallel files of different lengths, invalid UTF-8,
            no training pairs left after cleaning (by words or by pieces), or a ``destdir``
            that is not a data dir.
    """
    start = time.perf_counter()
    corpora = _resolve_corpora(config)
    destdir = Path(config.destdir)
    check_destdir(destdir, [c.path for pair in corpora.values() for c in pair])
    with staged_dir(destdir) as tmp, progress() as bar:
        clean_counts, models = _preprocess_train(config, corpora["train"], tmp, bar)
        pipelines = {lang: TextPipeline(config.text, lang, models[lang]) for lang in config.langs}
        splits = [_summarize(tmp, "train", corpora["train"][0].num_lines, config.langs)]
        for split in SPLITS[1:]:
            if split in corpora:
                splits.append(
                    _preprocess_heldout(config, split, corpora[split], pipelines, tmp, bar)
                )
        vocab_sizes = {lang: pipelines[lang].vocab_size for lang in config.langs}
        manifest = build_manifest(
            config=dataclasses.asdict(config),
            corpora=corpora,
            splits={s.name: dataclasses.asdict(s) for s in splits},
            clean_counts=clean_counts,
            vocab_sizes=vocab_sizes,
            spm_models={lang: spm_model_name(lang, joint=config.joint) for lang in config.langs},
            dtypes={
                f"{s.name}.{lang}": _dtype(tmp, s.name, lang)
                for s in splits
                for lang in config.langs
            },
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
        num_src, num_tgt = count_lines(src_path), count_lines(tgt_path)
        if num_src != num_tgt:
            raise DataError(
                f"parallel files differ in length: {src_path} has {num_src} lines, "
                f"{tgt_path} has {num_tgt}",
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


def _preprocess_train(
    config: PreprocessConfig, corpora: tuple[CorpusFile, CorpusFile], tmp: Path, bar: Progress
) -> tuple[dict[str, int], dict[str, bytes]]:
    """Clean the training pairs, learn SentencePiece and binarize; return counts and models."""
    prepared = {lang: tmp / f"train.prepared.{lang}" for lang in config.langs}
    clean_counts = _clean_train(config, corpora, prepared, bar)
    models = _learn_subwords(config, prepared, tmp)
    for lang in config.langs:
        processor = load_sentencepiece(models[lang], where=f"spm model for '{lang}'")
        task = bar.add_task(f"encode train.{lang}", total=count_lines(prepared[lang]))
        encoded = tmp / f"train.encoded.{lang}"
        write_dataset(encoded, _encode_prepared(processor, prepared[lang], bar, task))
        prepared[lang].unlink()
    clean_counts["too_many_pieces"] = _bound_train(config, tmp, corpora[0].path)
    log.info("binarized train")
    return clean_counts, models


def _bound_train(config: PreprocessConfig, tmp: Path, corpus: str) -> int:
    """Keep the encoded training pairs whose sides both have at most ``clean.max_pieces``
    pieces as ``train.{lang}``; return how many pairs were dropped.

    Raises:
        DataError: no pair is short enough.
    """
    encoded = [tmp / f"train.encoded.{lang}" for lang in config.langs]
    src, tgt = (TokenDataset(prefix) for prefix in encoded)
    keep = np.flatnonzero(np.maximum(src.lengths, tgt.lengths) <= config.clean.max_pieces)
    dropped = len(src) - keep.size
    if keep.size == 0:
        raise DataError(
            f"no training pairs left after cleaning: every pair has a side of more than "
            f"{config.clean.max_pieces} pieces",
            where=corpus,
            hint="check the corpus, or raise max_pieces",
        )
    for lang, prefix, dataset in zip(config.langs, encoded, (src, tgt), strict=True):
        kept = tmp / f"train.{lang}"
        if dropped:
            write_dataset(kept, (dataset[int(i)] for i in keep))
            bin_path(prefix).unlink()
            idx_path(prefix).unlink()
        else:
            os.replace(bin_path(prefix), bin_path(kept))
            os.replace(idx_path(prefix), idx_path(kept))
    if dropped:
        log.info("dropped %d training pairs over %d pieces", dropped, config.clean.max_pieces)
    return int(dropped)


def _clean_train(
    config: PreprocessConfig,
    corpora: tuple[CorpusFile, CorpusFile],
    prepared: dict[str, Path],
    bar: Progress,
) -> dict[str, int]:
    """Write the prepared text of the training pairs that pass cleaning; return counts by reason."""
    src_file = corpora[0]
    task = bar.add_task("prepare train", total=src_file.num_lines)
    preparers = [TextPreparer(config.text, lang) for lang in config.langs]
    cleaner = PairCleaner(config.clean)
    num_kept = 0
    src_path, tgt_path = prepared[config.src_lang], prepared[config.tgt_lang]
    with open_text(src_path, "w") as src_out, open_text(tgt_path, "w") as tgt_out:
        for number, (src, tgt) in enumerate(_read_pairs(corpora, config.skip_invalid), 1):
            src_prep = None if src is None else preparers[0].prepare(src)
            tgt_prep = None if tgt is None else preparers[1].prepare(tgt)
            if cleaner.reason(src_prep, tgt_prep) is None:
                src_out.write(f"{src_prep}\n")
                tgt_out.write(f"{tgt_prep}\n")
                num_kept += 1
            if number % 1000 == 0:
                bar.update(task, completed=number)
    bar.update(task, completed=src_file.num_lines)
    dropped = {reason: n for reason, n in cleaner.counts.items() if n}
    log.info(
        "cleaned train: kept %d of %d pairs, dropped %s", num_kept, src_file.num_lines, dropped
    )
    if num_kept == 0:
        raise DataError(
            "no training pairs left after cleaning",
            where=src_file.path,
            hint="check the corpus and the clean settings (min_len, max_len, max_ratio)",
        )
    return cleaner.counts


def _read_pairs(
    corpora: tuple[CorpusFile, CorpusFile], skip_invalid: bool
) -> Iterator[tuple[str | None, str | None]]:
    src, tgt = corpora
    hint = "--skip-invalid drops such pairs"
    yield from zip(
        read_lines(src.path, skip_invalid=skip_invalid, invalid_hint=hint),
        read_lines(tgt.path, skip_invalid=skip_invalid, invalid_hint=hint),
        strict=True,
    )


def _text_lines(path: Path) -> Iterator[str]:
    """Yield the lines of a text file written by this module, without their newline."""
    with open_text(path) as stream:
        for line in stream:
            yield line[:-1] if line.endswith("\n") else line


def _learn_subwords(
    config: PreprocessConfig, prepared: dict[str, Path], tmp: Path
) -> dict[str, bytes]:
    """Train joint or per-language SentencePiece models and write them; return them by language."""
    groups = [config.langs] if config.joint else [(lang,) for lang in config.langs]
    models: dict[str, bytes] = {}
    for langs in groups:
        began = time.perf_counter()
        lines = (line for lang in langs for line in _text_lines(prepared[lang]))
        model = train_sentencepiece(
            lines, model_type=config.subword, vocab_size=config.vocab_size, seed=config.seed
        )
        name = spm_model_name(langs[0], joint=config.joint)
        with atomic_write(tmp / name, "wb") as stream:
            stream.write(model)
        size = load_sentencepiece(model, where=name).get_piece_size()
        log.info(
            "learned %s %s (%d pieces) in %.1f s",
            config.subword,
            name,
            size,
            time.perf_counter() - began,
        )
        models.update(dict.fromkeys(langs, model))
    return models


def _encode_prepared(
    processor: spm.SentencePieceProcessor, path: Path, bar: Progress, task: TaskID
) -> Iterator[list[int]]:
    """Yield the ids of each prepared line, encoding in batches."""
    chunk: list[str] = []
    for line in _text_lines(path):
        chunk.append(line)
        if len(chunk) == _ENCODE_CHUNK:
            yield from processor.encode(chunk)
            bar.advance(task, len(chunk))
            chunk = []
    if chunk:
        yield from processor.encode(chunk)
        bar.advance(task, len(chunk))


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
        for src, tgt in _read_pairs(corpora, config.skip_invalid):
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
    for line in _text_lines(path):
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
    datasets = {lang: TokenDataset(tmp / f"{split}.{lang}") for lang in langs}
    return SplitSummary(
        name=split,
        num_lines=num_lines,
        num_sentences=len(datasets[langs[0]]),
        num_tokens={lang: d.num_tokens for lang, d in datasets.items()},
        num_unk={lang: d.count(UNK_ID) for lang, d in datasets.items()},
        num_cut=num_cut or dict.fromkeys(langs, 0),
    )


def _dtype(tmp: Path, split: str, lang: str) -> str:
    return str(TokenDataset(tmp / f"{split}.{lang}").dtype)


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
    table.caption = f"train dropped: {dropped or 'none'}{cut}; vocabulary: {vocab}"
    return table
