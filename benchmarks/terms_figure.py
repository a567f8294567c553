"""The picture of docs/terminology.md: one test sentence's attention without its glossary term
and with it (``--term-placement gate``), as ``nmtkit align --plot`` draws attention.

    python benchmarks/terms_figure.py --model DIR --glossary bench-out/terms/glossary.tsv \
        --sentence "The group of people are all covered by umbrellas." --out docs/figures
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nmtkit.alignment.heatmap import plot_heatmap
from nmtkit.checkpoint import load_model
from nmtkit.search import BeamSearch
from nmtkit.terminology import read_glossary
from nmtkit.translation.translator import Translator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--glossary", required=True, type=Path)
    parser.add_argument("--sentence", required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    loaded = load_model(args.model)
    glossary = read_glossary(args.glossary)
    for name, terms in (("terms-without", ()), ("terms-with", glossary)):
        translator = Translator(
            loaded,
            strategy=BeamSearch(BeamSearch.Config(beam_size=5, term_placement="gate")),
            with_alignment=True,
            terminology=terms,
        )
        (translation,) = translator.translate([args.sentence])
        best = translation.candidates[0]
        assert best.attention is not None
        used = ", ".join(f"{u.source} -> {u.target}" for u in best.terms) or "no glossary"
        plot_heatmap(
            best.attention.weights,
            src_words=best.attention.source,
            tgt_words=best.attention.target,
            path=args.out / f"{name}.png",
            title=f"{used}: {best.text}",
        )
        print(f"{name}: {best.text}  ({used})")


if __name__ == "__main__":
    main()
