"""Decoding strategies, registered by name (kind ``search``); each is batched over sentences
(and beams or samples) and keeps only unfinished sentences in the batch.

What a hypothesis's ``score`` means (``log_prob`` is always the raw sum of its words' log p,
EOS included; |y| counts EOS):

* ``greedy`` and ``sampling``: log p / |y|. Sampling returns its samples best first by it.
* ``beam``: log p / lp(y) + cp(x; y), GNMT's score (Wu et al., 2016), with
  lp(y) = ((5 + |y|) / 6)^alpha and cp = beta * sum_j log(min(attention paid to j, 1)). With
  alpha = 0 (``length_penalty: 0``) lp is exactly 1, and with beta = 0 cp is 0: the score is
  then the raw log p, by which Bahdanau et al. (2015) rank. Live hypotheses compete by their
  raw log p so far; finished ones are ranked, and returned best first, by this score.

Under a vocabulary shortlist (:mod:`nmtkit.shortlist`), log p is normalized over a
batch's candidate words, not the whole vocabulary.

Several models of one vocabulary search as one through
:class:`~nmtkit.search.ensemble.Ensemble`: log p is then that of the mean of their
probabilities.
"""

from nmtkit.search import beam, greedy, sampling  # noqa: F401  (registration)
from nmtkit.search.beam import BeamSearch
from nmtkit.search.greedy import GreedySearch
from nmtkit.search.sampling import SamplingSearch

__all__ = ["BeamSearch", "GreedySearch", "SamplingSearch"]
