"""Word alignments: attention gathered to words and turned into links (``attention_links``;
over files, ``file_alignment``), link extraction and symmetrization, Pharaoh I/O, scoring
against gold links (AER), heatmaps. (IBM Model 1, behind the vocabulary shortlist, lives with it
in :mod:`nmtkit.shortlist`.)"""
