"""Aligners that learn: a neural lexicon under an HMM (or attention) distortion, trained in both
directions on the text to align (``learner``, ``aligners``), read off as links (``extract``), over
files (``learned_alignment``): ``nmtkit align --learn``."""
