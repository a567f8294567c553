"""Decoding strategies, registered by name (kind ``search``); each is batched over sentences
(and beams) and keeps only unfinished sentences in the batch."""

from nmtkit.search import beam, greedy  # noqa: F401  (registration)
from nmtkit.search.beam import BeamSearch
from nmtkit.search.greedy import GreedySearch

__all__ = ["BeamSearch", "GreedySearch"]
