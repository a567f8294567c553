"""Word alignments: attention gathered to words and turned into links (``attention_links``;
over files, ``file_alignment``), link extraction and symmetrization, Pharaoh I/O, scoring
against gold links (AER), heatmaps; and IBM Model 1's lexical translation probabilities
(``ibm1``), behind the vocabulary shortlist."""
