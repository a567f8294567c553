"""RNNsearch and its relatives, built from registered components.

Shape glossary, used in every docstring and trailing shape comment:
    B batch, K beam, S source length, T target length, E embedding width,
    H encoder width per direction, C annotation (context) width, the encoder's ``output_size``
    (2H for ``birnn``), D decoder state, A attention hidden size, M readout (maxout) width,
    V target vocabulary. Flattened beams are written B*K.
"""

from nmtkit.models import (  # noqa: F401  (registration)
    attention,
    conditional_gru,
    decoders,
    encoders,
)
from nmtkit.models.seq2seq import Seq2Seq, build_model

__all__ = ["Seq2Seq", "build_model"]
