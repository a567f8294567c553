"""The training split of ``preprocess``: pairs prepared and cleaned in worker processes,
SentencePiece learned from a seeded sample of them, then encoded and bounded in pieces, in
memory that does not grow with the corpus (but for one bit a pair with ``dedup``)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.progress import Progress, TaskID

from nmtkit.data.datadir import CorpusFile, sampled_name, spm_model_name
from nmtkit.data.dataset import bin_path, idx_path, read_chunks, read_lengths, write_chunks
from nmtkit.data.dedup import DuplicateFinder, DuplicateMask
from nmtkit.data.target_vocab import emitted_size, remap_ids, trim_vocabulary, used_ids
from nmtkit.data.text import PairCleaner, load_sentencepiece, train_sentencepiece
from nmtkit.data.workers import (
    CHUNK_LINES,
    ChunkPool,
    chunked,
    encode_lines,
    prepare_pairs,
    sample_lines,
)
from nmtkit.errors import DataError
from nmtkit.files import open_text, read_pairs
from nmtkit.outputs import atomic_write

if TYPE_CHECKING:
    from nmtkit.data.preprocess import PreprocessConfig

log = logging.getLogger(__name__)

_SAMPLE_BLOCK = 1 << 20  # pairs given random keys at a time while sampling
_REMAP_BLOCK = 1 << 22  # target ids renumbered at a time when its vocabulary is trimmed


def build_train_split(
    config: PreprocessConfig,
    corpora: tuple[CorpusFile, CorpusFile],
    tmp: Path,
    bar: Progress,
    pool: ChunkPool,
) -> tuple[dict[str, int], dict[str, bytes]]:
    """Clean the training pairs, learn SentencePiece and binarize them as ``train.{lang}`` in
    ``tmp`` (and, with ``sampled_segmentations``, again in each sampled segmentation as
    ``train.sampled{k}.{lang}``); return the cleaning counts by reason and the models by
    language.

    Raises:
        DataError: invalid UTF-8 (without ``skip_invalid``), or no pair left after cleaning.
    """
    prepared = {lang: tmp / f"train.prepared.{lang}" for lang in config.langs}
    clean_counts, num_kept, repeats = _clean(config, corpora, prepared, bar, pool)
    kept = {lang: _kept_lines(prepared[lang], repeats) for lang in config.langs}
    models = _learn_subwords(config, kept, num_kept, tmp)
    names = ["train", *(sampled_name(k) for k in range(1, config.sampled_segmentations + 1))]
    for lang_index, lang in enumerate(config.langs):
        model_path = tmp / spm_model_name(lang, joint=config.joint)
        for number, name in enumerate(names):
            task = bar.add_task(f"encode {name}.{lang}", total=num_kept)
            if number == 0:
                encoded = _encode(pool, model_path, kept[lang](), bar, task)
            else:
                sample = functools.partial(
                    sample_lines,
                    alpha=config.sampling_alpha,
                    seed=(config.seed, number, lang_index),
                    max_pieces=config.clean.max_pieces,
                )
                encoded = _encode(pool, model_path, kept[lang](), bar, task, sample=sample)
            write_chunks(tmp / f"{name}.encoded.{lang}", encoded)
        prepared[lang].unlink()
    clean_counts["too_many_pieces"] = _bound(config, tmp, corpora[0].path, names)
    if config.trim_target_vocab:
        models[config.tgt_lang] = _trim_target(config, models[config.tgt_lang], tmp, names)
    log.info("binarized train")
    return clean_counts, models


def model_file(config: PreprocessConfig, lang: str) -> str:
    """The file name of the SentencePiece model that serves ``lang`` in the data dir: the
    target has one of its own when its vocabulary is trimmed."""
    own = not config.joint or (config.trim_target_vocab and lang == config.tgt_lang)
    return spm_model_name(lang, joint=not own)


def _trim_target(config: PreprocessConfig, model: bytes, tmp: Path, names: list[str]) -> bytes:
    """Trim the target's model to the pieces of its training sentences (every segmentation
    in ``names``), write it as the target's own model and renumber the target datasets to its
    ids, in place, a chunk at a time; return it."""
    lang = config.tgt_lang
    joint_name = spm_model_name(lang, joint=config.joint)
    size = load_sentencepiece(model, where=joint_name).get_piece_size()
    tokens = [np.load(bin_path(tmp / f"{name}.{lang}"), mmap_mode="r") for name in names]
    trimmed, new_ids = trim_vocabulary(model, used_ids(tokens, size))
    del tokens
    for name in names:
        ids = np.load(bin_path(tmp / f"{name}.{lang}"), mmap_mode="r+")
        for start in range(0, len(ids), _REMAP_BLOCK):
            block = ids[start : start + _REMAP_BLOCK]
            block[:] = remap_ids(np.asarray(block), new_ids)
        ids.flush()
        del ids
    with atomic_write(tmp / model_file(config, lang), "wb") as stream:
        stream.write(trimmed)
    kept = emitted_size(load_sentencepiece(trimmed, where=model_file(config, lang)))
    log.info(
        "trimmed the %s vocabulary to the %d of %d pieces its training side uses", lang, kept, size
    )
    return trimmed


def corpus_pairs(
    corpora: tuple[CorpusFile, CorpusFile], skip_invalid: bool
) -> Iterator[tuple[str | None, str | None]]:
    """Yield the line pairs of a parallel corpus (:func:`nmtkit.files.read_pairs`; None for a
    side that is not UTF-8 when ``skip_invalid``)."""
    src, tgt = corpora
    hint = "--skip-invalid drops such pairs"
    return read_pairs(src.path, tgt.path, skip_invalid=skip_invalid, invalid_hint=hint)


def text_lines(path: Path) -> Iterator[str]:
    """Yield the lines of a text file written by ``preprocess``, without their newline."""
    with open_text(path) as stream:
        for line in stream:
            yield line[:-1] if line.endswith("\n") else line


def sample_pairs(num_pairs: int, size: int, *, seed: int) -> np.ndarray:
    """Draw ``size`` of ``num_pairs`` indices uniformly without replacement, seeded; all of them
    when ``size`` is 0 or at least ``num_pairs``.

    Each index gets a random key and the ``size`` smallest keys win (bottom-k sampling), a
    block of keys at a time, so memory holds about ``size`` indices, never ``num_pairs``.

    Returns:
        The indices in increasing order, int64 [min(size, num_pairs)].
    """
    if size == 0 or num_pairs <= size:
        return np.arange(num_pairs, dtype=np.int64)
    rng = np.random.default_rng(seed)
    keys = np.empty(0, dtype=np.float64)
    indices = np.empty(0, dtype=np.int64)
    for start in range(0, num_pairs, _SAMPLE_BLOCK):
        stop = min(start + _SAMPLE_BLOCK, num_pairs)
        keys = np.concatenate([keys, rng.random(stop - start)])
        indices = np.concatenate([indices, np.arange(start, stop, dtype=np.int64)])
        if keys.size > size:
            smallest = np.argpartition(keys, size - 1)[:size]
            keys, indices = keys[smallest], indices[smallest]
    return np.sort(indices)


def select_lines(lines: Iterable[str], indices: np.ndarray) -> Iterator[str]:
    """Yield the lines at ``indices`` (increasing) of ``lines``."""
    wanted = map(int, indices)  # one Python int at a time, not a list of them (36 bytes each)
    target = next(wanted, None)
    for number, line in enumerate(lines):
        if target is None:
            return
        if number == target:
            yield line
            target = next(wanted, None)


def _clean(
    config: PreprocessConfig,
    corpora: tuple[CorpusFile, CorpusFile],
    prepared: dict[str, Path],
    bar: Progress,
    pool: ChunkPool,
) -> tuple[dict[str, int], int, DuplicateMask | None]:
    """Write the prepared text of the training pairs that pass ``clean_reason``; return the
    counts by reason, how many pairs are kept, and with ``dedup`` which of the pairs written
    repeat an earlier one (they stay in the file, and readers skip them)."""
    src_file = corpora[0]
    task = bar.add_task("prepare train", total=src_file.num_lines)
    cleaner = PairCleaner(config.clean)
    prepare = functools.partial(
        prepare_pairs, text=config.text, langs=config.langs, clean=config.clean
    )
    num_passed = 0
    src_path, tgt_path = prepared[config.src_lang], prepared[config.tgt_lang]
    finder = (
        DuplicateFinder(src_path.parent, src_file.num_lines)
        if config.clean.dedup
        else contextlib.nullcontext(None)
    )
    with open_text(src_path, "w") as src_out, open_text(tgt_path, "w") as tgt_out, finder as seen:
        for chunk in pool.map(prepare, chunked(corpus_pairs(corpora, config.skip_invalid))):
            cleaner.count(chunk.counts)
            if seen is not None:
                seen.add(chunk.digests)
            src_out.writelines(f"{src}\n" for src in chunk.src)
            tgt_out.writelines(f"{tgt}\n" for tgt in chunk.tgt)
            num_passed += len(chunk.src)
            bar.advance(task, chunk.num_pairs)
        repeats = None if seen is None else seen.duplicates()
    if repeats is not None:
        cleaner.count({"duplicate": repeats.count})
    num_kept = num_passed - cleaner.counts["duplicate"]
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
    return cleaner.counts, num_kept, repeats


def _kept_lines(path: Path, repeats: DuplicateMask | None) -> Callable[[], Iterator[str]]:
    """Return a function that yields the prepared lines at ``path`` of the pairs kept: all of
    them, or those that repeat no earlier pair."""

    def lines() -> Iterator[str]:
        every = text_lines(path)
        return every if repeats is None else repeats.unique(every)

    return lines


def _learn_subwords(
    config: PreprocessConfig,
    kept: dict[str, Callable[[], Iterator[str]]],
    num_pairs: int,
    tmp: Path,
) -> dict[str, bytes]:
    """Train joint or per-language SentencePiece models on a sample of the kept pairs (all
    sides of them for a joint model) and write them; return them by language."""
    sample = sample_pairs(num_pairs, config.subword_sample, seed=config.seed)
    samples = {lang: tmp / f"train.sample.{lang}" for lang in config.langs}
    if sample.size < num_pairs:
        log.info("learning subwords from %d of %d training pairs", sample.size, num_pairs)
        # SentencePiece reads the sample from a file of its own: fed while this process read
        # the whole corpus past it, it peaked some 60 MB higher at 3M pairs (the same lines).
        for lang, path in samples.items():
            with atomic_write(path) as stream:
                stream.writelines(f"{line}\n" for line in select_lines(kept[lang](), sample))
        kept = {lang: functools.partial(text_lines, path) for lang, path in samples.items()}
    groups = [config.langs] if config.joint else [(lang,) for lang in config.langs]
    models: dict[str, bytes] = {}
    for langs in groups:
        began = time.perf_counter()
        model = train_sentencepiece(
            (line for lang in langs for line in kept[lang]()),
            model_type=config.subword,
            vocab_size=config.vocab_size,
            seed=config.seed,
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
    for path in samples.values():
        path.unlink(missing_ok=True)
    return models


def _encode(
    pool: ChunkPool,
    model_path: Path,
    lines: Iterable[str],
    bar: Progress,
    task: TaskID,
    *,
    sample: functools.partial[tuple[np.ndarray, np.ndarray]] | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield prepared lines encoded a chunk at a time: ids and lengths; the one-best
    segmentation, or with ``sample`` (:func:`sample_lines` with its settings) a sampled one."""
    path, stamp = str(model_path), model_path.stat().st_mtime_ns
    if sample is None:
        encode = functools.partial(encode_lines, model_path=path, stamp=stamp)
        results = pool.map(encode, chunked(lines))
    else:
        sample = functools.partial(sample, model_path=path, stamp=stamp)
        results = pool.map(sample, enumerate(chunked(lines)))
    for ids, lengths in results:
        yield ids, lengths
        bar.advance(task, lengths.size)


def _bound(config: PreprocessConfig, tmp: Path, corpus: str, names: list[str]) -> int:
    """Keep the encoded training pairs whose sides both have at most ``clean.max_pieces``
    pieces in the one-best segmentation (``names[0]``, ``train``) as ``{name}.{lang}`` for
    every segmentation in ``names``; return how many pairs were dropped.

    Reads the datasets a chunk at a time, twice if a pair is dropped (once to count, once to
    copy), so memory does not grow with the corpus.

    Raises:
        DataError: no pair is short enough.
    """
    encoded = [tmp / f"{names[0]}.encoded.{lang}" for lang in config.langs]
    num_pairs = num_kept = 0
    for keep in _short_enough(encoded, config.clean.max_pieces):
        num_pairs += keep.size
        num_kept += int(np.count_nonzero(keep))
    if num_kept == 0:
        raise DataError(
            f"no training pairs left after cleaning: every pair has a side of more than "
            f"{config.clean.max_pieces} pieces",
            where=corpus,
            hint="check the corpus, or raise max_pieces",
        )
    dropped = num_pairs - num_kept
    for name in names:
        for lang in config.langs:
            prefix, kept = tmp / f"{name}.encoded.{lang}", tmp / f"{name}.{lang}"
            if dropped:
                lengths = read_lengths(prefix, chunk=CHUNK_LINES)
                chunks = read_chunks(prefix, lengths)
                masks = _short_enough(encoded, config.clean.max_pieces)
                write_chunks(kept, map(_select, chunks, masks))
            else:
                os.replace(bin_path(prefix), bin_path(kept))
                os.replace(idx_path(prefix), idx_path(kept))
    if dropped:
        for name in names:  # the one-best decides which pairs stay: delete them last
            for lang in config.langs:
                bin_path(tmp / f"{name}.encoded.{lang}").unlink()
                idx_path(tmp / f"{name}.encoded.{lang}").unlink()
        log.info("dropped %d training pairs over %d pieces", dropped, config.clean.max_pieces)
    return dropped


def _short_enough(encoded: list[Path], max_pieces: int) -> Iterator[np.ndarray]:
    """Yield, ``CHUNK_LINES`` pairs at a time, whether both sides of each pair have at most
    ``max_pieces`` pieces, bool [n]."""
    src, tgt = (read_lengths(prefix, chunk=CHUNK_LINES) for prefix in encoded)
    for src_lengths, tgt_lengths in zip(src, tgt, strict=True):
        yield np.maximum(src_lengths, tgt_lengths) <= max_pieces


def _select(
    chunk: tuple[np.ndarray, np.ndarray], keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Keep the sentences of a chunk (ids [sum(lengths)], lengths [n]) where ``keep`` [n]."""
    ids, lengths = chunk
    return ids[np.repeat(keep, lengths)], lengths[keep]
