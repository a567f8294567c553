"""Aligners that learn: a neural lexicon under an HMM (or attention) distortion, trained in both
directions on the text to align (``learner``), read off as links (``extract``), over files
(``corpus``): ``nmtkit align --learn``."""
