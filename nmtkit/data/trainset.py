"""The training split of ``preprocess``: pairs prepared and cleaned in worker processes,
SentencePiece learned from a seeded sample of them, then encoded and bounded in pieces, in
memory that grows with the corpus only by some 8 bytes a pair (offsets and digests)."""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.progress import Progress, TaskID

from nmtkit.data.datadir import CorpusFile, spm_model_name
from nmtkit.data.dataset import TokenDataset, bin_path, idx_path, write_chunks
from nmtkit.data.text import PairCleaner, load_sentencepiece, train_sentencepiece
from nmtkit.data.workers import CHUNK_LINES, ChunkPool, chunked, encode_lines, prepare_pairs
from nmtkit.errors import DataError
from nmtkit.files import atomic_write, open_text, read_pairs

if TYPE_CHECKING:
    from nmtkit.data.preprocess import PreprocessConfig

log = logging.getLogger(__name__)

_SAMPLE_BLOCK = 1 << 20  # pairs given random keys at a time while sampling


def build_train_split(
    config: PreprocessConfig,
    corpora: tuple[CorpusFile, CorpusFile],
    tmp: Path,
    bar: Progress,
    pool: ChunkPool,
) -> tuple[dict[str, int], dict[str, bytes]]:
    """Clean the training pairs, learn SentencePiece and binarize them as ``train.{lang}`` in
    ``tmp``; return the cleaning counts by reason and the models by language.

    Raises:
        DataError: invalid UTF-8 (without ``skip_invalid``), or no pair left after cleaning.
    """
    prepared = {lang: tmp / f"train.prepared.{lang}" for lang in config.langs}
    clean_counts, num_kept = _clean(config, corpora, prepared, bar, pool)
    models = _learn_subwords(config, prepared, num_kept, tmp)
    for lang in config.langs:
        task = bar.add_task(f"encode train.{lang}", total=num_kept)
        model_path = tmp / spm_model_name(lang, joint=config.joint)
        encoded = _encode(pool, model_path, prepared[lang], bar, task)
        write_chunks(tmp / f"train.encoded.{lang}", encoded)
        prepared[lang].unlink()
    clean_counts["too_many_pieces"] = _bound(config, tmp, corpora[0].path)
    log.info("binarized train")
    return clean_counts, models


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
    wanted = iter(indices.tolist())
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
) -> tuple[dict[str, int], int]:
    """Write the prepared text of the training pairs that pass cleaning; return the counts by
    reason and how many pairs were kept."""
    src_file = corpora[0]
    task = bar.add_task("prepare train", total=src_file.num_lines)
    cleaner = PairCleaner(config.clean)
    prepare = functools.partial(
        prepare_pairs, text=config.text, langs=config.langs, clean=config.clean
    )
    num_kept = 0
    src_path, tgt_path = prepared[config.src_lang], prepared[config.tgt_lang]
    with open_text(src_path, "w") as src_out, open_text(tgt_path, "w") as tgt_out:
        for chunk in pool.map(prepare, chunked(corpus_pairs(corpora, config.skip_invalid))):
            cleaner.count(chunk.counts)
            kept = cleaner.keep_new(chunk.digests)
            for src, tgt, keep in zip(chunk.src, chunk.tgt, kept, strict=True):
                if keep:
                    src_out.write(f"{src}\n")
                    tgt_out.write(f"{tgt}\n")
                    num_kept += 1
            bar.advance(task, chunk.num_pairs)
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
    return cleaner.counts, num_kept


def _learn_subwords(
    config: PreprocessConfig, prepared: dict[str, Path], num_pairs: int, tmp: Path
) -> dict[str, bytes]:
    """Train joint or per-language SentencePiece models on a sample of the prepared pairs (all
    sides of them for a joint model) and write them; return them by language."""
    sample = sample_pairs(num_pairs, config.subword_sample, seed=config.seed)
    if sample.size < num_pairs:
        log.info("learning subwords from %d of %d training pairs", sample.size, num_pairs)

    def lines(lang: str) -> Iterator[str]:
        every = text_lines(prepared[lang])
        return every if sample.size == num_pairs else select_lines(every, sample)

    groups = [config.langs] if config.joint else [(lang,) for lang in config.langs]
    models: dict[str, bytes] = {}
    for langs in groups:
        began = time.perf_counter()
        model = train_sentencepiece(
            (line for lang in langs for line in lines(lang)),
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
    return models


def _encode(
    pool: ChunkPool, model_path: Path, path: Path, bar: Progress, task: TaskID
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield the prepared lines of ``path`` encoded a chunk at a time: ids and lengths."""
    encode = functools.partial(
        encode_lines, model_path=str(model_path), stamp=model_path.stat().st_mtime_ns
    )
    for ids, lengths in pool.map(encode, chunked(text_lines(path))):
        yield ids, lengths
        bar.advance(task, lengths.size)


def _bound(config: PreprocessConfig, tmp: Path, corpus: str) -> int:
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
            steps = range(0, keep.size, CHUNK_LINES)
            write_chunks(kept, (dataset.gather(keep[i : i + CHUNK_LINES]) for i in steps))
            bin_path(prefix).unlink()
            idx_path(prefix).unlink()
        else:
            os.replace(bin_path(prefix), bin_path(kept))
            os.replace(idx_path(prefix), idx_path(kept))
    if dropped:
        log.info("dropped %d training pairs over %d pieces", dropped, config.clean.max_pieces)
    return int(dropped)
