"""Vocabulary shortlists: a shortlist of every word changes nothing, a narrow one keeps the
output within the candidates and normalizes over them, an uncovered sentence gets the whole
vocabulary, and the file round-trips and refuses another vocabulary."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from nmtkit.data.batching import collate, collate_source, pad
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import DataError
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.shortlist.restricted import ShortlistSearch
from nmtkit.shortlist.table import SPECIAL_IDS, Shortlist
from tests.unit.test_models import VOCAB, random_ids
from tests.unit.test_search import beam, greedy, sampling, sharp_model

WORDS = range(4, VOCAB)


def shortlist(entries: dict[int, list[int]], *, frequent: list[int] | None = None) -> Shortlist:
    """A shortlist giving source piece i the targets ``entries[i]`` (none if absent)."""
    lists = [entries.get(i, []) for i in range(VOCAB)]
    return Shortlist(
        offsets=np.cumsum([0, *map(len, lists)]).astype(np.int64),
        targets=np.array([t for targets in lists for t in targets], dtype=np.int64),
        frequent=np.array(frequent or [], dtype=np.int64),
        tgt_vocab_size=VOCAB,
        fingerprint="vocab",
        top_k=max(map(len, lists)),
        num_pairs=1,
    )


def narrow() -> Shortlist:
    """Each source piece w may become w or w + 1 (wrapping), and 4 is frequent."""
    return shortlist({w: [w, 4 + (w - 3) % (VOCAB - 4)] for w in WORDS}, frequent=[4])


def search(
    strategy: SearchStrategy,
    src_ids: list[list[int]],
    *,
    using: Shortlist | None,
    prefixes: list[list[int]] | None = None,
    max_len: int = 8,
) -> list[list[Hypothesis]]:
    model = sharp_model()
    src, lengths = collate_source(src_ids)
    arguments = {
        "max_lengths": torch.full((len(src_ids),), max_len),
        "pad_id": PAD_ID,
        "bos_id": BOS_ID,
        "eos_id": EOS_ID,
        "with_weights": True,
        "prefix": None if prefixes is None else pad(prefixes),
    }
    with torch.no_grad():
        if using is None:
            return strategy.search(model, src, lengths, **arguments)
        return ShortlistSearch(strategy, using).search(model, src, lengths, **arguments)


STRATEGIES = [
    pytest.param(greedy, id="greedy"),
    pytest.param(lambda: beam(4), id="beam"),
    pytest.param(lambda: sampling(num_samples=2, seed=3), id="sampling"),
]


@pytest.mark.parametrize("make", STRATEGIES)
@pytest.mark.parametrize("with_prefix", [False, True])
def test_a_shortlist_of_every_word_finds_what_the_full_search_finds(make, with_prefix) -> None:
    src = random_ids([5, 9, 3, 7], seed=1)
    prefixes = [[5, 6], [], [7], []] if with_prefix else None
    everything = shortlist({w: list(range(VOCAB)) for w in WORDS})
    full = search(make(), src, using=None, prefixes=prefixes)
    listed = search(make(), src, using=everything, prefixes=prefixes)
    for mine, theirs in zip(listed, full, strict=True):
        assert [h.tokens for h in mine] == [h.tokens for h in theirs]
        assert [h.log_prob for h in mine] == pytest.approx([h.log_prob for h in theirs], abs=1e-5)
        assert torch.allclose(mine[0].weights, theirs[0].weights)


@pytest.mark.parametrize("make", STRATEGIES)
def test_shortlisted_outputs_use_only_their_sentences_candidates(make) -> None:
    src = [[5, 6, 5], [9, 12], [12, 5, 6, 9]]
    allowed = narrow().allowed(collate_source(src)[0])  # [3, V]
    own = [set(row.nonzero()[:, 0].tolist()) for row in allowed]
    assert own[1] == {*SPECIAL_IDS, 4, 9, 10, 12, 13}
    assert narrow().candidates(collate_source(src)[0]).tolist() == sorted(set.union(*own))
    for hyps, candidates in zip(search(make(), src, using=narrow()), own, strict=True):
        assert all(set(h.tokens) <= candidates for h in hyps)


@pytest.mark.parametrize("make", STRATEGIES[:2])
def test_a_sentence_translates_the_same_alone_and_in_any_batch(make) -> None:
    src = random_ids([5, 9, 3, 7, 6], seed=2)
    together = search(make(), src, using=narrow())
    for sentence, found in zip(src, together, strict=True):
        alone = search(make(), [sentence], using=narrow())[0]
        assert [h.tokens for h in found] == [h.tokens for h in alone]
        assert [h.log_prob for h in found] == pytest.approx([h.log_prob for h in alone], abs=1e-5)


def test_log_prob_under_a_shortlist_is_normalized_over_the_candidates() -> None:
    src = random_ids([6], seed=4)
    vocab = narrow().candidates(collate_source(src)[0])
    found = search(greedy(), src, using=narrow())[0][0]
    batch = collate(src, [found.tokens], [0])
    with torch.no_grad():
        logits, _ = sharp_model()(batch)  # [T+1, V]
    targets = batch.tgt_out[0]
    assert vocab.tolist() == narrow().allowed(collate_source(src)[0])[0].nonzero()[:, 0].tolist()
    within = logits[:, vocab].log_softmax(-1)  # [T+1, V']
    restricted = within.gather(1, torch.searchsorted(vocab, targets)[:, None]).sum()
    everywhere = logits.log_softmax(-1).gather(1, targets[:, None]).sum()
    assert found.log_prob == pytest.approx(float(restricted), abs=1e-4)
    assert found.log_prob > float(everywhere)  # the candidates hold only part of the mass


def test_a_sentence_with_a_piece_the_table_lacks_is_searched_over_the_whole_vocabulary() -> None:
    src = [[4, 5, 6], [7, 8, 9, 10], [5, 6]]
    lacking = narrow()
    partial = shortlist(
        {
            w: lacking.targets[lacking.offsets[w] : lacking.offsets[w + 1]].tolist()
            for w in WORDS
            if w != 9
        },
        frequent=[4],
    )
    assert partial.covers(collate_source(src)[0]).tolist() == [True, False, True]
    together = search(beam(3), src, using=partial)
    alone = search(beam(3), [src[1]], using=None)[0]
    assert [h.tokens for h in together[1]] == [h.tokens for h in alone]
    covered = search(beam(3), [src[0], src[2]], using=partial)
    assert [h.tokens for h in together[0]] == [h.tokens for h in covered[0]]
    assert [h.tokens for h in together[2]] == [h.tokens for h in covered[1]]


def test_candidates_are_the_entries_the_frequent_words_the_special_ids_and_the_prefix() -> None:
    src, _ = collate_source([[4, 7], [7]])
    prefix = pad([[], [12]])
    found = narrow().candidates(src, prefix=prefix).tolist()
    assert found == sorted({*SPECIAL_IDS, 4, 5, 7, 8, 12})
    allowed = narrow().allowed(src, prefix=prefix)
    assert allowed[0].nonzero()[:, 0].tolist() == sorted({*SPECIAL_IDS, 4, 5, 7, 8})
    assert allowed[1].nonzero()[:, 0].tolist() == sorted({*SPECIAL_IDS, 4, 7, 8, 12})


def test_a_saved_shortlist_loads_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "shortlist.npz"
    narrow().save(path)
    loaded = Shortlist.load(path, fingerprint="vocab")
    assert np.array_equal(loaded.offsets, narrow().offsets)
    assert np.array_equal(loaded.targets, narrow().targets)
    assert np.array_equal(loaded.frequent, narrow().frequent)
    assert (loaded.tgt_vocab_size, loaded.top_k) == (VOCAB, 2)
    assert not (tmp_path / "shortlist.npz.tmp").exists()


def test_loading_refuses_another_vocabulary_a_damaged_file_and_no_file(tmp_path: Path) -> None:
    path = tmp_path / "shortlist.npz"
    narrow().save(path)
    with pytest.raises(DataError, match="another vocabulary"):
        Shortlist.load(path, fingerprint="other")
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataError, match="damaged"):
        Shortlist.load(path, fingerprint="vocab")
    with pytest.raises(DataError, match="no shortlist"):
        Shortlist.load(tmp_path / "absent.npz", fingerprint="vocab")
