"""``model.share_embeddings``: one table for both languages, kept through a checkpoint, and
refused by name on data with a SentencePiece model per language."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nmtkit.checkpoint import load_model
from nmtkit.config import load_config
from nmtkit.data.preprocess import preprocess
from nmtkit.errors import ConfigError
from nmtkit.training.trainer import train
from tests.toy_corpora import preprocess_toy, reverse_pairs, toy_config

SHARED = [
    "model.share_embeddings=true",
    "model.decoder.tie_embeddings=true",
    "train.max_updates=3",
    "train.tune_length_penalties=[]",
]


def test_shared_embeddings_train_and_load_as_one_table(tmp_path: Path) -> None:
    data = preprocess_toy(
        tmp_path, reverse_pairs(200, seed=1), reverse_pairs(20, seed=2), trim_target_vocab=False
    )
    train(data, tmp_path / "model", load_config(preset="tiny", overrides=SHARED))
    model = load_model(tmp_path / "model").model
    table = model.decoder.target_embedding()
    assert model.src_embed is table and model.decoder.output.weight is table.weight


def test_sharing_is_refused_on_data_with_a_vocabulary_per_language(tmp_path: Path) -> None:
    # Another alphabet on the target side: per-language SentencePiece models that truly differ.
    train_pairs, valid_pairs = (
        [(src, tgt.upper()) for src, tgt in reverse_pairs(n, seed=seed)]
        for n, seed in ((200, 1), (20, 2))
    )
    config = toy_config(tmp_path, train_pairs, valid_pairs)
    preprocess(dataclasses.replace(config, joint=False))
    with pytest.raises(ConfigError, match="one SentencePiece model for both languages") as caught:
        train(tmp_path / "data", tmp_path / "model", load_config(preset="tiny", overrides=SHARED))
    assert str(tmp_path / "data") in str(caught.value)


def test_sharing_is_refused_on_data_with_a_trimmed_target_vocabulary(tmp_path: Path) -> None:
    # A joint model, but the target side writes upper case only: trimming drops the lower case.
    train_pairs, valid_pairs = (
        [(src, tgt.upper()) for src, tgt in reverse_pairs(n, seed=seed)]
        for n, seed in ((200, 1), (20, 2))
    )
    preprocess(toy_config(tmp_path, train_pairs, valid_pairs))
    with pytest.raises(ConfigError, match="one SentencePiece model for both languages") as caught:
        train(tmp_path / "data", tmp_path / "model", load_config(preset="tiny", overrides=SHARED))
    assert "--keep-target-vocab" in (caught.value.hint or "")
