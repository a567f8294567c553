"""--precision int8 keeps a learned model's translations: int8 decoding of the model that learned
to reverse sequences (the shared ``reversal_model``) gives the fp32 translations on short ones
(torchao needed; skipped without it)."""

from __future__ import annotations

import pytest
import torch

from nmtkit.checkpoint import load_model
from nmtkit.translation.translator import Translator
from tests.integration.learned import REVERSAL_GROUP, LearnedModel
from tests.toy_corpora import reverse_pairs

pytestmark = pytest.mark.slow
pytest.importorskip("torchao")


def same_share(lines: list[str], others: list[str]) -> float:
    return sum(a == b for a, b in zip(lines, others, strict=True)) / len(lines)


@REVERSAL_GROUP
def test_int8_translations_match_fp32_on_a_learned_task(reversal_model: LearnedModel) -> None:
    pairs = reverse_pairs(200, seed=7, max_len=6)
    sources = [src for src, _ in pairs]
    fp32 = Translator(load_model(reversal_model.path), precision="fp32")
    expected = [t.text for t in fp32.translate(sources)]
    assert same_share(expected, [ref for _, ref in pairs]) >= 0.9  # fp32 learned the task
    int8 = Translator(load_model(reversal_model.path), precision="int8")
    assert int8.precision == "int8"
    assert int8.loaded.model.decoder.output.weight.qdata.dtype == torch.int8
    outputs = [t.text for t in int8.translate(sources)]
    assert same_share(outputs, expected) >= 0.9
