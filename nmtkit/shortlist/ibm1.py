"""IBM Model 1 (Brown et al., 1993, §4.1): the lexical translation probabilities t(f|e) of
target pieces f given source pieces e (or NULL), learned by EM over subword ids; the table
behind the vocabulary shortlist of ``translate --shortlist``."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from nmtkit.data.dataset import TokenDataset
from nmtkit.errors import ConfigError, DataError

log = logging.getLogger(__name__)

DEFAULT_ITERATIONS = 5
DEFAULT_MAX_PAIRS = 1_000_000
# Co-occurrences (source piece or NULL, target piece) held at once: some 30 bytes each while the
# table is set up, 4 bytes each during EM. Multi30k's 29k pairs have about 5.5 million.
DEFAULT_MAX_CELLS = 16_000_000
_READ_PAIRS = 8192  # sentence pairs read from the datasets at a time
_BLOCK_CELLS = 1 << 22  # co-occurrences of one vectorized E-step block


@dataclass(frozen=True, kw_only=True, slots=True)
class LexicalTable:
    """t(f|e) over the (e, f) pairs that co-occur in some sentence pair, sparse.

    Attributes:
        src: the source piece e of each entry, [N]; ``null_id`` (= the source vocabulary size)
            is NULL.
        tgt: the target piece f of each entry, [N].
        prob: t(f|e), [N]; the entries of each e sum to 1.
        tgt_counts: how often each target piece occurs in the sample, [V_tgt].
        num_pairs: the sentence pairs learned from.
    """

    src: np.ndarray
    tgt: np.ndarray
    prob: np.ndarray
    tgt_counts: np.ndarray
    num_pairs: int
    null_id: int

    def best(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Each source piece's (NULL's not) ``k`` most probable target pieces, most probable
        first (ties: lower id first): offsets [V_src + 1] into targets [n], as CSR rows; a piece
        never seen has none."""
        order = np.lexsort((-self.prob, self.src))  # by source, then t(f|e) descending
        src = self.src[order]
        firsts = np.flatnonzero(np.r_[True, src[1:] != src[:-1]])  # each source's first entry
        rank = np.arange(src.size) - np.repeat(firsts, np.diff(np.r_[firsts, src.size]))
        keep = (rank < k) & (src != self.null_id)
        counts = np.bincount(src[keep], minlength=self.null_id)
        offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
        return offsets, self.tgt[order][keep].astype(np.int32)

    def most_frequent(self, n: int) -> np.ndarray:
        """The ``n`` most frequent target pieces of the sample (ties: lower id first): [n']."""
        seen = np.flatnonzero(self.tgt_counts)
        order = np.lexsort((seen, -self.tgt_counts[seen]))
        return seen[order[:n]].astype(np.int32)


def train_ibm1(
    src: TokenDataset,
    tgt: TokenDataset,
    *,
    src_vocab_size: int,
    tgt_vocab_size: int,
    iterations: int = DEFAULT_ITERATIONS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    max_cells: int = DEFAULT_MAX_CELLS,
    seed: int = 1,
) -> LexicalTable:
    """Learn t(f|e) by EM from a seeded sample of the pairs (``src[i]``, ``tgt[i]``).

    The sample takes pairs in a random order (a function of ``seed``) until ``max_pairs`` pairs
    or ``max_cells`` co-occurrences ((source length + 1) x target length a pair), so that time
    and memory stay bounded on any corpus. EM starts from uniform t, whose first E-step counts
    every co-occurrence alike.

    Raises:
        ConfigError: ``iterations``, ``max_pairs`` or ``max_cells`` below 1.
        DataError: the datasets differ in length, or hold no pair with words on both sides.
    """
    for name, value in (("iterations", iterations), ("max_pairs", max_pairs)):
        if value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")
    if max_cells < 1:
        raise ConfigError(f"max_cells must be at least 1, got {max_cells}")
    if len(src) != len(tgt):
        raise DataError(
            f"{src.prefix.name} has {len(src)} sentences but {tgt.prefix.name} has {len(tgt)}",
            where=str(src.prefix.parent),
        )
    chosen = _sample(src.lengths, tgt.lengths, max_pairs=max_pairs, max_cells=max_cells, seed=seed)
    if chosen.size == 0:
        raise DataError("no sentence pair has pieces on both sides", where=str(src.prefix.parent))
    cells = _Cells.read(src, tgt, chosen, null_id=src_vocab_size, tgt_vocab_size=tgt_vocab_size)
    log.debug("IBM Model 1: %d pairs, %d co-occurrences", chosen.size, cells.entry.size)
    prob = np.full(cells.src.size, 1.0 / tgt_vocab_size, dtype=np.float32)
    for _ in range(iterations):
        counts = cells.expected_counts(prob)  # E-step
        totals = np.bincount(cells.src, weights=counts, minlength=src_vocab_size + 1)
        prob = (counts / totals[cells.src]).astype(np.float32)  # M-step: t(f|e) = c(e,f) / c(e)
    return LexicalTable(
        src=cells.src,
        tgt=cells.tgt,
        prob=prob,
        tgt_counts=cells.tgt_counts,
        num_pairs=int(chosen.size),
        null_id=src_vocab_size,
    )


def _sample(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, *, max_pairs: int, max_cells: int, seed: int
) -> np.ndarray:
    """Indices of the sampled pairs with words on both sides, ascending: [n]."""
    usable = np.flatnonzero((src_lengths > 0) & (tgt_lengths > 0))
    order = usable[np.random.default_rng(seed).permutation(usable.size)][:max_pairs]
    cells = np.cumsum((src_lengths[order] + 1) * tgt_lengths[order])
    count = max(int(np.searchsorted(cells, max_cells, side="right")), min(1, order.size))
    return np.sort(order[:count])


@dataclass(frozen=True, kw_only=True, slots=True)
class _Cells:
    """Every co-occurrence of the sample, grouped by target token: for each target token, the
    cells of its sentence's NULL and source pieces, one after another.

    Attributes:
        entry: each cell's (e, f) entry, [C]; src, tgt: each entry's e and f, [N].
        group_sizes: cells per target token (its source length + 1), [G].
        tgt_counts: occurrences of each target piece, [V_tgt].
    """

    entry: np.ndarray
    src: np.ndarray
    tgt: np.ndarray
    group_sizes: np.ndarray
    tgt_counts: np.ndarray

    @classmethod
    def read(
        cls,
        src: TokenDataset,
        tgt: TokenDataset,
        chosen: np.ndarray,
        *,
        null_id: int,
        tgt_vocab_size: int,
    ) -> _Cells:
        keys, sizes = [], []
        counts = np.zeros(tgt_vocab_size, dtype=np.int64)
        for start in range(0, chosen.size, _READ_PAIRS):
            part = chosen[start : start + _READ_PAIRS]
            src_ids, src_lengths = src.gather(part)
            tgt_ids, tgt_lengths = tgt.gather(part)
            if max(int(src_ids.max()), int(tgt_ids.max())) >= max(null_id, tgt_vocab_size):
                raise DataError("token ids beyond the vocabulary", where=str(src.prefix.parent))
            chunk_keys, chunk_sizes = _cell_keys(
                src_ids, src_lengths, tgt_ids, tgt_lengths, null_id=null_id, width=tgt_vocab_size
            )
            keys.append(chunk_keys)
            sizes.append(chunk_sizes)
            counts += np.bincount(tgt_ids, minlength=tgt_vocab_size)
        entry, unique = _numbered(np.concatenate(keys))
        return cls(
            entry=entry,
            src=(unique // tgt_vocab_size).astype(np.int32),
            tgt=(unique % tgt_vocab_size).astype(np.int32),
            group_sizes=np.concatenate(sizes),
            tgt_counts=counts,
        )

    def expected_counts(self, prob: np.ndarray) -> np.ndarray:
        """E-step: c(e, f) = sum over f's tokens of t(f|e) / sum_e' t(f|e') over the token's
        sentence's e' (NULL included), per entry: [N] float64."""
        counts = np.zeros(self.src.size, dtype=np.float64)
        ends = np.cumsum(self.group_sizes)
        group = 0
        while group < self.group_sizes.size:
            first = int(ends[group - 1]) if group else 0
            # Whole groups only, about _BLOCK_CELLS cells (at least one group).
            last = max(int(np.searchsorted(ends, first + _BLOCK_CELLS, side="right")), group + 1)
            cells = self.entry[first : int(ends[last - 1])]
            sizes = self.group_sizes[group:last]
            p = prob[cells]  # [c]
            starts = np.cumsum(sizes) - sizes
            posterior = p / np.repeat(np.add.reduceat(p, starts), sizes)  # [c]
            counts += np.bincount(cells, weights=posterior, minlength=self.src.size)
            group = last
        return counts


def _numbered(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number the distinct keys in ascending order: each key's number [C] int32, and the
    distinct keys [N] (``np.unique`` with ``return_inverse``, in some 25 bytes a key, not 40)."""
    order = np.argsort(keys)
    ordered = keys[order]
    first = np.empty(ordered.size, dtype=bool)  # True where a new key starts
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    numbers = np.empty(keys.size, dtype=np.int32)
    numbers[order] = np.cumsum(first, dtype=np.int32) - 1
    return numbers, ordered[first]


def _cell_keys(
    src_ids: np.ndarray,
    src_lengths: np.ndarray,
    tgt_ids: np.ndarray,
    tgt_lengths: np.ndarray,
    *,
    null_id: int,
    width: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The cells of a chunk of pairs as keys e * width + f, grouped by target token, [c], and
    the group sizes, [g] (one group per target token)."""
    # Each source sentence with NULL in front: [sum(src_lengths + 1)].
    with_null = src_lengths + 1
    firsts = np.cumsum(with_null) - with_null
    extended = np.full(int(with_null.sum()), null_id, dtype=np.int64)
    not_first = np.ones(extended.size, dtype=bool)
    not_first[firsts] = False
    extended[not_first] = src_ids
    # One group per target token: its sentence's extended source.
    sizes = np.repeat(with_null, tgt_lengths)  # [g]
    group_firsts = np.repeat(firsts, tgt_lengths)  # [g]
    cell_starts = np.cumsum(sizes) - sizes
    within = np.arange(int(sizes.sum())) - np.repeat(cell_starts, sizes)  # [c]
    src_of_cell = extended[np.repeat(group_firsts, sizes) + within]  # [c]
    keys = src_of_cell * width + np.repeat(tgt_ids, sizes)
    small = (null_id + 1) * width <= np.iinfo(np.int32).max  # int32 keys sort faster
    return keys.astype(np.int32 if small else np.int64), sizes.astype(np.int32)
