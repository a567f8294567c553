"""Terminology benchmark: a test set translated without constraints, with its glossary's terms
as bare constraints, and with the glossary itself under each placement (none, bonus, gate).

Run through ``benchmarks/terminology.sh`` (``make bench-terms``), which builds the glossary
(``benchmarks/terms_glossary.sh``). For every variant, in this one process with the model
loaded once, one thing at a time:

* decode speed: ``Translator.translate`` over the whole test set (raw text in, text out; no
  alignment kept), sentences per second, the median of ``--runs`` runs;
* quality: sacreBLEU (13a, cased) and chrF of the output against the raw references, and term
  accuracy (``nmtkit.scoring.terms``, exact match of each required term's 13a words) against
  the glossary's per-line terms;
* placement: the same variant again with word alignments kept (the search is the same; only
  the attention is recorded): the share of met glossary terms whose words are linked (argmax
  links, ``align``'s default) to their source term's words. For the unconstrained output and
  the bare constraints, the terms are found in the output and judged the same way.

Output: a Markdown table on stdout, the outputs and ``terms.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sacrebleu
import torch

from nmtkit.checkpoint import load_model
from nmtkit.data.text import word_index, words
from nmtkit.scoring.terms import term_accuracy
from nmtkit.search import BeamSearch
from nmtkit.terminology import Glossary, Term, read_constraints, read_glossary
from nmtkit.translation.results import Translation
from nmtkit.translation.translator import Translator


@dataclass(frozen=True)
class Variant:
    name: str
    placement: str = "none"
    bare: bool = False  # the per-line terms as --constraints
    glossary: bool = False  # the glossary as --terminology


VARIANTS = (
    Variant("no constraints"),
    Variant("constraints (--constraints terms.txt)", bare=True),
    Variant("glossary, placement none", placement="none", glossary=True),
    Variant("glossary, placement bonus", placement="bonus", glossary=True),
    Variant("glossary, placement gate", placement="gate", glossary=True),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--source", required=True, type=Path)
    parser.add_argument("--reference", required=True, type=Path)
    parser.add_argument("--glossary", required=True, type=Path)
    parser.add_argument("--terms", required=True, type=Path, help="per-line target terms")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--variants", default="", help="comma-separated indices (default all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    sources = args.source.read_text("utf-8").splitlines()
    refs = args.reference.read_text("utf-8").splitlines()
    entries = read_glossary(args.glossary)
    per_line = read_constraints(args.terms)
    required = [[term.target for term in line] for line in per_line]
    loaded = load_model(args.model)
    glossary = Glossary(entries, loaded.src_text)
    chosen = [VARIANTS[int(i)] for i in args.variants.split(",")] if args.variants else VARIANTS
    print(
        f"model {args.model}, {len(sources)} sentences, {len(entries)} glossary entries, "
        f"{sum(map(len, required))} required terms, beam {args.beam}, "
        f"{torch.get_num_threads()} threads, cpu {torch.backends.cpu.get_cpu_capability()}",
        file=sys.stderr,
    )
    rows = []
    for variant in chosen:
        rows.append(measure(variant, args, loaded, sources, refs, entries, per_line, glossary))
        print(json.dumps(rows[-1]), file=sys.stderr)
    (args.out / "terms.json").write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    print(
        "| variant | term accuracy % | BLEU | chrF | decode sent/s | placed at the aligned "
        "source term % |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        placed = "n/a" if row["placed"] is None else f"{row['placed']:.1f}"
        print(
            f"| {row['variant']} | {row['term_accuracy']:.2f} ({row['matched']}/{row['total']})"
            f" | {row['bleu']:.2f} | {row['chrf']:.2f} | {row['sent_s']:.1f} | {placed} "
            f"({row['placed_n']}) |"
        )
    return 0


def measure(
    variant: Variant,
    args: argparse.Namespace,
    loaded,
    sources: list[str],
    refs: list[str],
    entries: Sequence[Term],
    per_line: list[tuple[Term, ...]],
    glossary: Glossary,
) -> dict:
    def translator(with_alignment: bool) -> Translator:
        strategy = BeamSearch(
            BeamSearch.Config(
                beam_size=args.beam,
                length_penalty=loaded.config.search.strategy.options.length_penalty,
                term_placement=variant.placement,
            )
        )
        return Translator(
            loaded,
            strategy=strategy,
            with_alignment=with_alignment,
            terminology=entries if variant.glossary else (),
        )

    constraints = per_line if variant.bare else None
    fast = translator(False)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        hyps = [t.text for t in fast.translate(sources, constraints=constraints)]
        times.append(time.perf_counter() - start)
    slug = variant.name.split(" (")[0].replace(", ", "-").replace(" ", "_")
    (args.out / f"{slug}.de").write_text("".join(h + "\n" for h in hyps), "utf-8")
    required = [[term.target for term in line] for line in per_line]
    accuracy = term_accuracy(hyps, required)
    aligned = list(translator(True).translate(sources, constraints=constraints))
    placed = placement(aligned, per_line, glossary, loaded)
    return {
        "variant": variant.name,
        "term_accuracy": accuracy.score,
        "matched": accuracy.matched,
        "total": accuracy.total,
        "bleu": sacrebleu.corpus_bleu(hyps, [refs]).score,
        "chrf": sacrebleu.corpus_chrf(hyps, [refs]).score,
        "sent_s": len(sources) / statistics.median(times),
        "seconds": times,
        "placed": None if not placed else 100 * sum(placed) / len(placed),
        "placed_n": len(placed),
    }


def placement(
    translations: list[Translation],
    per_line: list[tuple[Term, ...]],
    glossary: Glossary,
    loaded,
) -> list[bool]:
    """For every glossary term found in an output (met), whether its words are linked to its
    source term's words: from the candidate's own ``terms`` where the search knew the source
    term, else by finding the term's pieces in the output and its source term in the input."""
    verdicts: list[bool] = []
    for translation in translations:
        best = translation.candidates[0]
        known = [use for use in best.terms if use.source is not None and use.met]
        if known:
            verdicts += [bool(use.aligned) for use in known]
            continue
        if best.links is None or best.attention is None:
            continue
        src_pieces = loaded.src_text.pieces(translation.source)
        src_index = word_index(src_pieces)
        out_words = list(best.attention.target)  # the words the links number
        for match in glossary.find(src_pieces):
            term = words(loaded.tgt_text.id_to_piece(loaded.tgt_text.encode(match.term.target)))
            width = len(term)
            starts = [
                s for s in range(len(out_words) - width + 1) if out_words[s : s + width] == term
            ]
            if not starts:
                continue
            targets = {s + k for s in starts for k in range(width)}
            sources = {src_index[p] for a, b in match.source_spans for p in range(a, b)}
            verdicts.append(any(i in sources and j in targets for i, j in best.links))
    return verdicts


if __name__ == "__main__":
    sys.exit(main())
