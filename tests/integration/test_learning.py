"""Learning, not just running: RNNsearch learns to reverse sequences in about a minute of CPU
(the shared ``reversal_model``), and concatenation augmentation teaches it to translate several
sentences on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmtkit.checkpoint import load_model
from nmtkit.config import load_config
from nmtkit.training.trainer import train
from nmtkit.translation.translator import Translator
from tests.integration.learned import REVERSAL_GROUP, LearnedModel
from tests.toy_corpora import preprocess_toy, reverse_pairs, sentence_reverse_pairs

pytestmark = pytest.mark.slow


def exact_match(model_dir: Path, pairs: list[tuple[str, str]]) -> float:
    translator = Translator(load_model(model_dir))
    outputs = [t.text for t in translator.translate(src for src, _ in pairs)]
    return sum(out == ref for out, (_, ref) in zip(outputs, pairs, strict=True)) / len(pairs)


@REVERSAL_GROUP
def test_rnnsearch_learns_to_reverse_sequences(reversal_model: LearnedModel) -> None:
    assert reversal_model.best_bleu is not None and reversal_model.best_bleu > 90
    assert exact_match(reversal_model.path, reverse_pairs(300, seed=7)) >= 0.95


def test_resumed_run_continues_the_same_run(reverse_data: Path, tmp_path: Path) -> None:
    """N + M updates in one go equal N updates, an interruption, and M more after --resume."""
    common = ["train.log_every=1", "train.validate_every=15", "model.dropout=0.3"]

    def losses(model_dir: Path) -> list[float]:
        records = [json.loads(line) for line in (model_dir / "metrics.jsonl").open()]
        return [r["loss"] for r in records if r["kind"] == "train"]

    whole = load_config(preset="tiny", overrides=[*common, "train.max_updates=40"])
    train(reverse_data, tmp_path / "whole", whole)
    first = load_config(preset="tiny", overrides=[*common, "train.max_updates=25"])
    train(reverse_data, tmp_path / "split", first)
    train(reverse_data, tmp_path / "split", whole, resume=True)
    assert len(losses(tmp_path / "whole")) == 40
    assert losses(tmp_path / "split") == losses(tmp_path / "whole")


def test_concatenation_teaches_a_model_to_go_on_after_a_sentence_end(tmp_path: Path) -> None:
    """Trained on single sentences, a model stops after the first sentence of a joined line;
    with concatenation augmentation it translates the whole line."""
    (tmp_path / "corpus").mkdir()
    data = preprocess_toy(
        tmp_path / "corpus",
        sentence_reverse_pairs(3000, seed=1),
        sentence_reverse_pairs(100, seed=2),
    )
    joined = [
        *sentence_reverse_pairs(100, seed=7, sentences=2),
        *sentence_reverse_pairs(100, seed=8, sentences=3),
    ]
    common = ["train.max_updates=700", "train.validate_every=700", "train.max_tokens=600"]
    scores = {}
    for name, extra in (("plain", []), ("concat", ["train.concat_rate=1.0"])):
        config = load_config(preset="tiny", overrides=[*common, *extra])
        train(data, tmp_path / name, config)
        scores[name] = exact_match(tmp_path / name, joined)
    assert scores["plain"] < 0.2, scores
    assert scores["concat"] >= 0.8, scores
