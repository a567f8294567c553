"""Encoders (kind ``encoder``): the bidirectional RNN of RNNsearch, a unidirectional RNN, and the
transformer and convolutional alternatives."""

from nmtkit.models.encoders import conv, recurrent, transformer  # noqa: F401  (registration)
