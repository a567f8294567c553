"""Decoding strategies, registered by name (kind ``search``); each is batched over sentences
(and beams or samples) and keeps only unfinished sentences in the batch."""

from nmtkit.search import beam, greedy, sampling  # noqa: F401  (registration)
from nmtkit.search.beam import BeamSearch
from nmtkit.search.greedy import GreedySearch
from nmtkit.search.sampling import SamplingSearch

__all__ = ["BeamSearch", "GreedySearch", "SamplingSearch"]
