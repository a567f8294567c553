"""Scoring translations: sacreBLEU metrics with their signatures, several systems side by side,
paired significance tests, and scores by sentence length with their plot (the paper's Figure 2)."""
