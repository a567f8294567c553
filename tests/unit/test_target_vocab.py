"""The trimmed target vocabulary (``preprocess --trim-target-vocab``, the default): the target's
own SentencePiece model holds the joint model's pieces that its training side uses first, segments
that side as the joint model did, splits any other word into used pieces, and the data dir's
target ids are that model's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm

from nmtkit.data.datadir import load_pipeline
from nmtkit.data.dataset import TokenDataset
from nmtkit.data.preprocess import preprocess
from nmtkit.data.target_vocab import emitted_size, remap_ids, trim_vocabulary, used_ids
from nmtkit.data.text import UNK_ID, TextPipeline, TextSettings, train_sentencepiece
from nmtkit.errors import DataError
from tests.toy_corpora import toy_config

SOURCE = ["the quick brown fox", "a lazy dog sleeps", "quick dogs and lazy foxes", "the end"]
TARGET = ["der schnelle fuchs", "ein fauler hund schläft", "schnelle hunde", "das ende"]


@pytest.fixture(scope="module")
def joint_model() -> bytes:
    """A joint BPE model learned on both sides of the toy text."""
    return train_sentencepiece(SOURCE * 20 + TARGET * 20, model_type="bpe", vocab_size=90)


def _trimmed(joint_model: bytes) -> tuple[bytes, np.ndarray, spm.SentencePieceProcessor]:
    joint = spm.SentencePieceProcessor(model_proto=joint_model)
    tokens = [np.array(joint.encode(line)) for line in TARGET]
    model, new_ids = trim_vocabulary(joint_model, used_ids(tokens, joint.get_piece_size()))
    return model, new_ids, joint


def test_used_pieces_and_letters_come_first_and_the_target_segments_as_before(
    joint_model: bytes,
) -> None:
    model, new_ids, joint = _trimmed(joint_model)
    trimmed = spm.SentencePieceProcessor(model_proto=model)
    pieces = [joint.id_to_piece(i) for i in range(joint.get_piece_size())]
    used = {i for line in TARGET for i in joint.encode(line)}
    kept = used | {i for i, piece in enumerate(pieces) if len(piece) == 1}
    assert emitted_size(trimmed) == 4 + len(kept) < joint.get_piece_size()
    assert emitted_size(joint) == joint.get_piece_size()  # an untrimmed model: all of it
    assert [trimmed.id_to_piece(i) for i in range(4)] == pieces[:4]
    assert sorted(new_ids[sorted(kept)]) == list(range(4, 4 + len(kept)))
    assert "▁the" in pieces and not {"▁the", "▁quick"} & {pieces[i] for i in kept}
    for line in TARGET:
        old = np.array(joint.encode(line))
        assert remap_ids(old, new_ids).tolist() == trimmed.encode(line)
        assert trimmed.decode(trimmed.encode(line)) == line


@pytest.mark.parametrize("line", ["the end", "then", "quick dogs", "the lazy fox"])
def test_a_word_of_unused_pieces_is_split_into_used_ones(joint_model: bytes, line: str) -> None:
    model, _, joint = _trimmed(joint_model)
    pipeline = TextPipeline(TextSettings(normalize=False), "de", model)
    ids = pipeline.encode(line)
    assert all(i < pipeline.vocab_size for i in ids) and UNK_ID not in ids
    assert pipeline.decode(ids) == line
    assert len(ids) > len(joint.encode(line))  # in smaller pieces than the source side's
    assert len(ids) == len(pipeline.pieces(line))


def test_trimming_refuses_what_is_not_a_model_or_a_flag_per_piece(joint_model: bytes) -> None:
    with pytest.raises(DataError, match="not a SentencePiece model"):
        trim_vocabulary(b"\x08\x96\x01 definitely not a model", np.ones(3, dtype=bool))
    with pytest.raises(DataError, match="usage flags"):
        trim_vocabulary(joint_model, np.ones(5, dtype=bool))


def _upper_target(tmp_path: Path, *, trim: bool) -> Path:
    from tests.toy_corpora import reverse_pairs

    pairs = [(src, tgt.upper()) for src, tgt in reverse_pairs(200, seed=1)]
    valid = [(src, tgt.upper()) for src, tgt in reverse_pairs(20, seed=2)] + [("a b", "A B a")]
    config = toy_config(tmp_path, pairs, valid)
    preprocess(dataclasses.replace(config, trim_target_vocab=trim))
    return tmp_path / "data"


def test_preprocess_writes_the_target_its_own_trimmed_model(tmp_path: Path) -> None:
    data = _upper_target(tmp_path, trim=True)
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["spm_models"] == {"src": "spm.model", "tgt": "spm.tgt.model"}
    source, target = load_pipeline(data, "src"), load_pipeline(data, "tgt")
    assert manifest["vocab_sizes"] == {"src": source.vocab_size, "tgt": target.vocab_size}
    assert target.vocab_size < source.vocab_size  # the lower-case pieces are gone
    lines = (tmp_path / "train.tgt").read_text(encoding="utf-8").splitlines()
    dataset = TokenDataset(data / "train.tgt")
    for number in range(len(dataset)):
        ids = dataset[number]
        assert int(ids.max()) < target.vocab_size
        assert ids.tolist() == target.encode(lines[number])
        assert target.decode(ids) == lines[number]
    valid = TokenDataset(data / "valid.tgt")
    last = valid[len(valid) - 1].tolist()  # 'a': a letter of the source side alone
    assert last == target.encode("A B a") and UNK_ID not in last
    assert target.decode(last) == "A B a"


def test_keep_target_vocab_keeps_the_joint_ids(tmp_path: Path) -> None:
    data = _upper_target(tmp_path, trim=False)
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["spm_models"] == {"src": "spm.model", "tgt": "spm.model"}
    assert load_pipeline(data, "tgt").vocab_size == load_pipeline(data, "src").vocab_size
