"""Vocabulary shortlists, as Marian's lexical shortlists: a decoding batch's output layer only
over the target pieces that its source pieces can produce, searched in that subset's numbering.

The whole feature lives here, one module a layer:

* :mod:`~nmtkit.shortlist.ibm1`: IBM Model 1, the lexical table t(f|e) it is learned from;
* :mod:`~nmtkit.shortlist.table`: the :class:`~nmtkit.shortlist.table.Shortlist` itself, each
  source piece's ``top_k`` most probable target pieces and the ``frequent`` most frequent ones
  (``shortlist.npz``), and each sentence's candidates: its source pieces' lists, the
  frequent pieces, the special ids and its forced prefix words;
* :mod:`~nmtkit.shortlist.restricted`: a search strategy run over each sentence's candidates
  alone. The search cuts their rows of the output layer W_o once per batch
  (:meth:`nmtkit.models.Seq2Seq.shortlist_rows`) and hands them to every decoder step
  (:meth:`nmtkit.registry.Decoder.shortlist_step`); the search sees candidate i as word i;
* :mod:`~nmtkit.shortlist.builder`: ``nmtkit shortlist`` (build a model directory's
  ``shortlist.npz``) and ``translate --shortlist`` (open it).

Fallback: a sentence holding a source piece that the table has no entry for (one never seen in
the pairs it was learned from) is searched apart from the others of its batch, over the whole
vocabulary, exactly as without a shortlist.

What a shortlist changes besides speed:

* log-probabilities are normalized over the sentence's candidates, not the whole vocabulary, so
  a word's log p is at least its full-softmax log p, and a hypothesis's ``log_prob`` and
  ``score`` are those of the restricted model, not comparable with scores found without a
  shortlist.

A batch's output layer is cut once to the union of its sentences' candidates; each sentence's
log p is then normalized over its own, so a sentence translates the same whatever shares its
batch (up to the rounding of the products, as without a shortlist).
"""
