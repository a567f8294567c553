"""The shortlist table (``shortlist.npz``): each source piece's most probable target pieces
and the most frequent target pieces; which sentences it covers, and each sentence's candidates."""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmtkit.errors import DataError
from nmtkit.outputs import atomic_write

log = logging.getLogger(__name__)

FORMAT = "nmtkit-shortlist"
FORMAT_VERSION = 1
SPECIAL_IDS = (PAD_ID, UNK_ID, BOS_ID, EOS_ID)  # always candidates
REBUILD_HINT = "build it with: nmtkit shortlist DATA_DIR -m MODEL_DIR, DATA_DIR the model's data"


@dataclass(frozen=True, kw_only=True)
class Shortlist:
    """The target pieces each source piece may produce, and those every batch may.

    Attributes:
        offsets: CSR offsets into ``targets`` of each source piece, [V_src + 1]; a piece with
            none was never seen, and a sentence holding it uses the whole vocabulary.
        targets: each source piece's ``top_k`` target pieces, most probable first, [n].
        frequent: the most frequent target pieces, every batch's candidates, [F].
        tgt_vocab_size: V, the target vocabulary's size.
        fingerprint: the vocabulary it was built for (a SHA-256 of both SentencePiece models).
        top_k: target pieces kept per source piece.
        num_pairs: the training pairs the table was learned from.
    """

    offsets: np.ndarray
    targets: np.ndarray
    frequent: np.ndarray
    tgt_vocab_size: int
    fingerprint: str
    top_k: int
    num_pairs: int

    def save(self, path: Path) -> None:
        """Write the shortlist to ``path`` (an ``.npz``) atomically.

        Raises:
            DataError: ``path`` cannot be written.
        """
        with atomic_write(path, "wb") as stream:
            np.savez(
                stream,
                format=np.array(FORMAT),
                format_version=np.array(FORMAT_VERSION),
                fingerprint=np.array(self.fingerprint),
                tgt_vocab_size=np.array(self.tgt_vocab_size),
                top_k=np.array(self.top_k),
                num_pairs=np.array(self.num_pairs),
                offsets=self.offsets.astype(np.int64),
                targets=self.targets.astype(np.int32),
                frequent=self.frequent.astype(np.int32),
            )

    @classmethod
    def load(cls, path: Path, *, fingerprint: str) -> Shortlist:
        """Read a shortlist written by :meth:`save` for the vocabulary ``fingerprint``.

        Raises:
            DataError: no such file, not a shortlist, a damaged one, or one built for another
                vocabulary.
        """
        if not path.is_file():
            raise DataError("no shortlist for this model", where=str(path), hint=REBUILD_HINT)
        try:
            with np.load(path, allow_pickle=False) as stored:
                fields = {name: stored[name] for name in stored.files}
            if str(fields["format"]) != FORMAT:
                raise KeyError("format")
            if int(fields["format_version"]) > FORMAT_VERSION:
                raise DataError("written by a newer nmtkit", where=str(path), hint="upgrade nmtkit")
            shortlist = cls(
                offsets=fields["offsets"].astype(np.int64),
                targets=fields["targets"].astype(np.int64),
                frequent=fields["frequent"].astype(np.int64),
                tgt_vocab_size=int(fields["tgt_vocab_size"]),
                fingerprint=str(fields["fingerprint"]),
                top_k=int(fields["top_k"]),
                num_pairs=int(fields["num_pairs"]),
            )
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
            raise DataError("not an nmtkit shortlist, or a damaged one", where=str(path)) from None
        if shortlist.fingerprint != fingerprint:
            raise DataError(
                "built for another vocabulary than this model's", where=str(path), hint=REBUILD_HINT
            )
        shortlist._check(path)
        return shortlist

    def _check(self, path: Path) -> None:
        offsets, size = self.offsets, self.tgt_vocab_size
        ids = np.concatenate([self.targets, self.frequent])
        if (
            offsets.ndim != 1
            or offsets.size == 0
            or offsets[0] != 0
            or np.any(np.diff(offsets) < 0)
            or offsets[-1] != self.targets.size
            or (ids.size and (ids.min() < 0 or ids.max() >= size))
        ):
            raise DataError("damaged shortlist: its tables do not agree", where=str(path))

    def covers(self, src: Tensor, *, special: tuple[int, ...] = SPECIAL_IDS) -> Tensor:
        """Which sentences of ``src`` [B, S] have an entry for every source piece (special ids
        aside): [B] bool, on ``src``'s device."""
        ids = src.cpu().numpy()
        seen = np.zeros(max(self.offsets.size - 1, int(ids.max()) + 1), dtype=bool)
        seen[: self.offsets.size - 1] = self.offsets[1:] > self.offsets[:-1]
        seen[list(special)] = True
        return torch.from_numpy(seen[ids].all(axis=1)).to(src.device)

    def allowed(
        self, src: Tensor, *, prefix: Tensor | None = None, special: tuple[int, ...] = SPECIAL_IDS
    ) -> Tensor:
        """The target pieces each sentence of ``src`` [B, S] may produce: [B, V] bool, on
        ``src``'s device. A sentence's are its own source pieces' entries (special ids ignored;
        a piece with none adds none), the frequent pieces, ``special``, and the words of its row
        of ``prefix`` [B, P]."""
        ids = src.cpu().numpy()
        rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])  # the sentence of each piece
        pieces = ids.reshape(-1)
        listed = (pieces < self.offsets.size - 1) & ~np.isin(pieces, special)
        rows, pieces = rows[listed], pieces[listed]
        starts = self.offsets[pieces]
        lengths = self.offsets[pieces + 1] - starts
        # The entries of every source piece, back to back: its start plus its rank in it.
        firsts = np.cumsum(lengths) - lengths
        entries = np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()))
        keep = np.zeros((ids.shape[0], self.tgt_vocab_size), dtype=bool)
        keep[np.repeat(rows, lengths), self.targets[entries]] = True
        keep[:, self.frequent] = True
        keep[:, list(special)] = True
        if prefix is not None:
            words = prefix.cpu().numpy()
            keep[np.arange(words.shape[0])[:, None], words] = True
        return torch.from_numpy(keep).to(src.device)

    def candidates(
        self, src: Tensor, *, prefix: Tensor | None = None, special: tuple[int, ...] = SPECIAL_IDS
    ) -> Tensor:
        """The target pieces that some sentence of ``src`` [B, S] may produce (:meth:`allowed`),
        ascending, [V'] (on ``src``'s device)."""
        return self.allowed(src, prefix=prefix, special=special).any(dim=0).nonzero()[:, 0]
