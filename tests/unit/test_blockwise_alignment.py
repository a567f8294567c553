"""A long pair aligned in blocks of target steps gives the links of the whole-matrix path (each
pair aligned alone there too: a batch's padding may move the last bits of its weights)."""

from __future__ import annotations

import random

import pytest
import torch

from nmtkit.alignment import attention_links
from nmtkit.alignment.attention_links import align_corpus
from nmtkit.data.batching import collate
from nmtkit.search.ensemble import Ensemble
from tests.unit.test_models import random_ids, tiny_model


class _Loaded:
    """A model and text pipelines whose words are one to five pieces (a piece per letter)."""

    class _Text:
        def encode(self, line: str) -> list[int]:
            return [
                4 + 2 * (ord(ch) % 8) + (k == 0)
                for word in line.split()
                for k, ch in enumerate(word)
            ]

        def id_to_piece(self, ids) -> list[str]:
            return ["\u2581x" if (i - 4) % 2 else "x" for i in ids]

    def __init__(self, model) -> None:
        self.model = model
        self.src_text = self._Text()
        self.tgt_text = self._Text()


def _line(rng: random.Random, num_words: int) -> str:
    return " ".join(
        "".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 5))) for _ in range(num_words)
    )


def _pairs(seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    sizes = [(1, 1), (3, 2), (12, 15), (20, 9), (7, 30)]
    return [_line(rng, s) for s, _ in sizes], [_line(rng, t) for _, t in sizes]


@pytest.mark.parametrize(("method", "threshold"), [("argmax", 0.5), ("threshold", 0.08)])
@pytest.mark.parametrize("steps", [1, 3, 7])
def test_blockwise_links_equal_the_whole_matrix_links(
    monkeypatch: pytest.MonkeyPatch, method: str, threshold: float, steps: int
) -> None:
    loaded = _Loaded(tiny_model("model.init_scale=1.0"))
    src, tgt = _pairs(seed=steps)
    whole = list(align_corpus(loaded, src, tgt, method=method, threshold=threshold, batch_size=1))
    monkeypatch.setattr(attention_links, "_BLOCK_CELLS", 0)
    monkeypatch.setattr(attention_links, "_BLOCK_STEPS", steps)
    blocked = list(
        align_corpus(loaded, src, tgt, method=method, threshold=threshold, keep_weights=False)
    )
    assert all(item.weights.shape == (0, 0) for item in blocked)  # the block path ran
    assert [item.links for item in blocked] == [item.links for item in whole]
    assert [item.tgt_words for item in blocked] == [item.tgt_words for item in whole]
    assert sum(len(item.links) for item in whole) > 10


def test_blockwise_ensemble_links_equal_the_whole_matrix_links(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = _Loaded(tiny_model()), _Loaded(tiny_model(seed=1))
    src, tgt = _pairs(seed=0)
    whole = list(align_corpus(first, src, tgt, ensemble_with=[second], batch_size=1))
    monkeypatch.setattr(attention_links, "_BLOCK_CELLS", 0)
    monkeypatch.setattr(attention_links, "_BLOCK_STEPS", 4)
    blocked = list(align_corpus(first, src, tgt, ensemble_with=[second], keep_weights=False))
    assert [item.links for item in blocked] == [item.links for item in whole]


def test_kept_weights_keep_the_whole_matrix_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attention_links, "_BLOCK_CELLS", 0)
    src, tgt = _pairs(seed=0)
    items = list(align_corpus(_Loaded(tiny_model()), src, tgt))
    assert all(item.weights.shape == (len(item.tgt_words), len(item.src_words)) for item in items)


@pytest.mark.parametrize("model", [tiny_model(), Ensemble([tiny_model(), tiny_model(seed=1)])])
def test_attention_blocks_are_the_rows_of_force_decode(model) -> None:
    batch = collate(random_ids([9, 4]), random_ids([11, 6], seed=1), [0, 1])
    with torch.inference_mode():
        blocks = list(model.force_decode_blocks(batch, block=4))
        whole = model.force_decode(batch)  # [B, T, S]
    assert [block.shape[1] for block in blocks] == [4, 4, 4]  # T = 11 + EOS
    assert torch.equal(torch.cat(blocks, dim=1), whole)
