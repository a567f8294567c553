"""Whole-word vocabularies for the neural aligner.

An aligner links the words of the very text it learned from, so every word of that text gets an
id: there is no unknown word to fall back on and no subword to merge back into a word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from nmtkit.data.text import PAD_ID

PAD, NULL, BOS = PAD_ID, 1, 2  # PAD is the data's, so that nmtkit.data.batching.pad pads here
SPECIALS = ("<pad>", "<null>", "<bos>")


class WordVocab:
    """Word <-> id, most frequent first after the special entries."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words = list(words)
        self.ids = {word: index for index, word in enumerate(self.words)}

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]]) -> WordVocab:
        counts = Counter(word for sentence in sentences for word in sentence)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return cls([*SPECIALS, *(word for word, _ in ranked)])

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, sentence: Sequence[str]) -> list[int]:
        """The ids of a sentence's words; a word outside the vocabulary raises KeyError."""
        return [self.ids[word] for word in sentence]
