"""Word alignments: links from attention, Pharaoh files, scoring against gold, symmetrization.

Each module is imported where it is needed; ``nmtkit.align`` aligns corpora with a model.
"""
