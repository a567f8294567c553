"""Attention scorers (kind ``attention``): the additive alignment model of RNNsearch, the dot
family of Luong et al. and multi-head, location-aware attention, and RNNencdec's fixed context."""

from nmtkit.models.attention import additive, dot, fixed, location  # noqa: F401  (registration)
