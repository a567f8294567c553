"""nmtkit: neural machine translation with RNNsearch (Bahdanau, Cho and Bengio, 2015)."""

__version__ = "0.1.0"
