"""Generated toy corpora (reverse the sequence, or each sentence of a line) that prove learning in
seconds, and their preprocessing."""

from __future__ import annotations

import random
from pathlib import Path

from nmtkit.data.preprocess import PreprocessConfig, preprocess
from nmtkit.data.text import CleanSettings, TextSettings

SYMBOLS = [chr(ord("a") + i) for i in range(12)]


def reverse_pairs(
    num: int, *, seed: int, min_len: int = 3, max_len: int = 10
) -> list[tuple[str, str]]:
    """Random symbol sequences and their reversal."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(num):
        seq = [rng.choice(SYMBOLS) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((" ".join(seq), " ".join(reversed(seq))))
    return pairs


def write_pairs(prefix: Path, pairs: list[tuple[str, str]]) -> None:
    """Write ``prefix.src`` and ``prefix.tgt``."""
    prefix.with_name(prefix.name + ".src").write_text("".join(s + "\n" for s, _ in pairs), "utf-8")
    prefix.with_name(prefix.name + ".tgt").write_text("".join(t + "\n" for _, t in pairs), "utf-8")


def toy_config(
    folder: Path,
    train: list[tuple[str, str]],
    valid: list[tuple[str, str]],
    clean: CleanSettings | None = None,
    *,
    trim_target_vocab: bool = True,
) -> PreprocessConfig:
    """Write a toy corpus into ``folder`` and return the config that preprocesses it into
    ``folder/data`` with a tiny joint vocabulary (and ``clean``'s cleaning, default if None;
    ``trim_target_vocab`` False keeps the joint ids on the target side)."""
    write_pairs(folder / "train", train)
    write_pairs(folder / "valid", valid)
    return PreprocessConfig(
        src_lang="src",
        tgt_lang="tgt",
        trainpref=str(folder / "train"),
        validpref=str(folder / "valid"),
        destdir=str(folder / "data"),
        text=TextSettings(normalize=False),
        clean=clean or CleanSettings(),
        vocab_size=40,
        trim_target_vocab=trim_target_vocab,
    )


def preprocess_toy(
    folder: Path,
    train: list[tuple[str, str]],
    valid: list[tuple[str, str]],
    *,
    trim_target_vocab: bool = True,
) -> Path:
    """Preprocess a toy corpus into ``folder/data`` with a tiny joint vocabulary."""
    preprocess(toy_config(folder, train, valid, trim_target_vocab=trim_target_vocab))
    return folder / "data"


def sentence_reverse_pairs(
    num: int, *, seed: int, min_len: int = 3, max_len: int = 6, sentences: int = 1
) -> list[tuple[str, str]]:
    """Lines of ``sentences`` sentences, each random symbols and a period; the target reverses
    each sentence's symbols and keeps the sentences in order ("a b c ." -> "c b a .")."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(num):
        src, tgt = [], []
        for _ in range(sentences):
            seq = [rng.choice(SYMBOLS) for _ in range(rng.randint(min_len, max_len))]
            src.append(" ".join([*seq, "."]))
            tgt.append(" ".join([*reversed(seq), "."]))
        pairs.append((" ".join(src), " ".join(tgt)))
    return pairs
