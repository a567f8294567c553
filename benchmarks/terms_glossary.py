"""A glossary for the terminology benchmark, built automatically and reproducibly from the test
set's source and reference (never from any system's translations).

python benchmarks/terms_glossary.py tokenize IN OUT
    IN (raw text, ``.gz`` read) tokenized by sacreBLEU's 13a tokenizer, one line a line: the
    words `nmtkit align --learn` links (it splits its input at spaces, so its Pharaoh indices
    count 13a tokens) and the words the consistency check below compares.
python benchmarks/terms_glossary.py build --model DIR --source test.en --reference test.de \
        --alignment test.align --train-source train.en.gz --train-target train.de.gz --out DIR
    The glossary (``OUT/glossary.tsv``) and the terms it applies to each test line
    (``OUT/terms.txt``), and its statistics (stdout and ``OUT/stats.json``).

``benchmarks/terms_glossary.sh OUT_DIR`` runs both, with the alignment step between them.

The recipe (deterministic given the alignment; every count is over 13a tokens):

1. Alignment: the test source and reference, 13a-tokenized, aligned by ``nmtkit align --learn``
   (learned on the test pairs plus Multi30k train, both 13a-tokenized; its default ``soft``
   links, lowercased text; pairs, epochs and seed as ``terms_glossary.sh`` sets them),
   Pharaoh ``i-j``: source token i, reference token j (0-based).
2. Content words: a token is one if it is alphabetic (``str.isalpha``), has at least 3
   characters, and its lowercased form is not among the ``--stopwords`` (100) most frequent
   lowercased tokens of the training text of its language (train.de for reference words,
   train.en for source words; ties in frequency broken alphabetically).
3. Candidates: a reference token with exactly one link, to a source token that has exactly one
   link (1:1), both content words. Per sentence, keep the ``--per-sentence`` (2) candidates
   whose lowercased reference word is rarest in train.de (ties: earlier in the reference; a
   word is kept once per sentence). A candidate is the pair (source word lowercased, reference
   word as written).
4. Entries: one target per source term, the one it was paired with most often over the test set
   (ties: the alphabetically first target). An entry is dropped if the glossary matcher
   (``nmtkit.terminology.glossary.Glossary(entries, src_text).find(src_text.pieces(line))``, the
   model's own source pipeline) finds its source term in no test source line, or in any line
   whose reference does not have the target as a whole 13a token, case-sensitive. So every
   term the glossary applies to a test line is in that line's reference.
5. Outputs: ``glossary.tsv`` (``source<TAB>target``, sorted), and ``terms.txt``, one line per
   test line: the targets of the entries the matcher finds in it, in the order it gives them,
   tab-separated (an empty line for none): the input of ``nmtkit score --terms`` and a valid
   ``nmtkit translate --constraints`` file.

The model only decides where a source term matches (its normalization and subwords); the
glossary is otherwise the same for every model.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

TOKENIZE = Tokenizer13a()


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (``.gz`` read), without their line ends (split at
    newlines only, as nmtkit reads a file: not at the other separators ``str.splitlines``
    knows)."""
    data = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        data = gzip.decompress(data)
    lines = data.decode("utf-8").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def tokens(line: str) -> list[str]:
    """The 13a tokens of a line."""
    return TOKENIZE(line.strip()).split()


def tokenize(src: str, out: str) -> None:
    with open(out, "w", encoding="utf-8") as output:
        for line in read_lines(src):
            output.write(" ".join(tokens(line)) + "\n")


def frequencies(path: str | Path) -> Counter[str]:
    """How often each lowercased 13a token occurs in a text."""
    counts: Counter[str] = Counter()
    for line in read_lines(path):
        counts.update(token.lower() for token in tokens(line))
    return counts


def most_frequent(counts: Counter[str], n: int) -> set[str]:
    """The n most frequent words (ties in frequency broken alphabetically)."""
    return {word for word, _ in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))[:n]}


def is_content(word: str, stopwords: set[str]) -> bool:
    return word.isalpha() and len(word) >= 3 and word.lower() not in stopwords


def parse_links(line: str, *, where: str) -> list[tuple[int, int]]:
    links = []
    for link in line.split():
        i, sep, j = link.partition("-")
        if not sep or not i.isdigit() or not j.isdigit():
            sys.exit(f"{where}: not a Pharaoh link: {link!r}")
        links.append((int(i), int(j)))
    return links


def candidates(
    src: list[str],
    ref: list[str],
    links: Iterable[tuple[int, int]],
    *,
    src_stop: set[str],
    tgt_stop: set[str],
    tgt_counts: Counter[str],
    keep: int,
) -> list[tuple[str, str]]:
    """A sentence's glossary candidates (source word lowercased, reference word), rarest
    reference word first, at most ``keep``."""
    by_src: dict[int, set[int]] = {}
    by_tgt: dict[int, set[int]] = {}
    for i, j in links:
        by_src.setdefault(i, set()).add(j)
        by_tgt.setdefault(j, set()).add(i)
    found: list[tuple[int, int, str, str]] = []  # (train count, position, source, target)
    for j, sources in by_tgt.items():
        if len(sources) != 1:
            continue
        (i,) = sources
        if len(by_src[i]) != 1:
            continue
        source, target = src[i], ref[j]
        if is_content(source, src_stop) and is_content(target, tgt_stop):
            found.append((tgt_counts[target.lower()], j, source.lower(), target))
    chosen: list[tuple[str, str]] = []
    for _, _, source, target in sorted(found):
        if target not in {t for _, t in chosen}:
            chosen.append((source, target))
        if len(chosen) == keep:
            break
    return chosen


def build(args: argparse.Namespace) -> None:
    from nmtkit.checkpoint import load_model
    from nmtkit.terminology.glossary import Glossary, Term

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    src_lines = list(read_lines(args.source))
    ref_lines = list(read_lines(args.reference))
    align_lines = list(read_lines(args.alignment))
    if not len(src_lines) == len(ref_lines) == len(align_lines):
        sys.exit(
            f"line counts differ: {len(src_lines)} source, {len(ref_lines)} reference, "
            f"{len(align_lines)} alignment"
        )
    tgt_counts = frequencies(args.train_target)
    src_stop = most_frequent(frequencies(args.train_source), args.stopwords)
    tgt_stop = most_frequent(tgt_counts, args.stopwords)

    # 1-3: each sentence's candidates.
    src_tokens = [tokens(line) for line in src_lines]
    ref_tokens = [tokens(line) for line in ref_lines]
    pairings: Counter[tuple[str, str]] = Counter()
    sentences_with_candidates = 0
    for number, (src, ref, align) in enumerate(
        zip(src_tokens, ref_tokens, align_lines, strict=True), start=1
    ):
        links = parse_links(align, where=f"{args.alignment}:{number}")
        if any(i >= len(src) or j >= len(ref) for i, j in links):
            sys.exit(f"{args.alignment}:{number}: a link beyond the 13a tokens of its pair")
        chosen = candidates(
            src,
            ref,
            links,
            src_stop=src_stop,
            tgt_stop=tgt_stop,
            tgt_counts=tgt_counts,
            keep=args.per_sentence,
        )
        sentences_with_candidates += bool(chosen)
        pairings.update(chosen)

    # 4: one target per source term, then the consistency filter.
    best: dict[str, tuple[int, str]] = {}
    for (source, target), count in pairings.items():
        if source not in best or (-count, target) < (-best[source][0], best[source][1]):
            best[source] = (count, target)
    entries = [Term(source=s, target=t, where=s) for s, (_, t) in sorted(best.items())]
    src_text = load_model(args.model).src_text
    src_pieces = [src_text.pieces(line) for line in src_lines]
    ref_words = [set(ref) for ref in ref_tokens]
    # Each entry alone (so that no other entry hides a match of it): the lines it matches, and
    # whether all their references have its target.
    matched: dict[str, int] = {}
    inconsistent: set[str] = set()
    for entry in entries:
        assert entry.source is not None
        alone = Glossary([entry], src_text)
        hits = [
            words for pieces, words in zip(src_pieces, ref_words, strict=True) if alone.find(pieces)
        ]
        matched[entry.source] = len(hits)
        if any(entry.target not in words for words in hits):
            inconsistent.add(entry.source)
    unmatched = [e for e in entries if matched[e.source or ""] == 0]
    kept = [e for e in entries if matched[e.source or ""] and e.source not in inconsistent]

    # 5: the outputs, from the kept entries as one glossary.
    final = Glossary(kept, src_text)
    terms_per_line: list[list[str]] = []
    for pieces, words in zip(src_pieces, ref_words, strict=True):
        targets = [found.term.target for found in final.find(pieces)]
        missing = [t for t in targets if t not in words]
        assert not missing, f"a kept term is not in its reference: {missing}"
        terms_per_line.append(targets)
    (out / "glossary.tsv").write_text(
        "".join(
            f"{e.source}\t{e.target}\n" for e in sorted(kept, key=lambda e: (e.source, e.target))
        ),
        encoding="utf-8",
    )
    (out / "terms.txt").write_text(
        "".join("\t".join(targets) + "\n" for targets in terms_per_line), encoding="utf-8"
    )
    total = sum(len(t) for t in terms_per_line)
    with_terms = sum(bool(t) for t in terms_per_line)
    stats = {
        "lines": len(src_lines),
        "lines_with_candidates": sentences_with_candidates,
        "candidate_pairs": sum(pairings.values()),
        "source_terms": len(entries),
        "dropped_no_match": len(unmatched),
        "dropped_inconsistent": len(inconsistent),
        "entries": len(kept),
        "lines_with_terms": with_terms,
        "terms": total,
        "terms_per_line": round(total / max(1, len(src_lines)), 3),
        "terms_per_line_with_terms": round(total / max(1, with_terms), 3),
        "max_terms_per_line": max((len(t) for t in terms_per_line), default=0),
        "stopwords": args.stopwords,
        "per_sentence": args.per_sentence,
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
    for key, value in stats.items():
        print(f"{key}\t{value}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tok = commands.add_parser("tokenize", help="13a-tokenize a text file")
    tok.add_argument("input")
    tok.add_argument("output")
    make = commands.add_parser("build", help="build the glossary and the per-line terms")
    make.add_argument("--model", required=True, help="model directory (its source pipeline)")
    make.add_argument("--source", required=True, help="raw test source, one sentence a line")
    make.add_argument("--reference", required=True, help="raw test reference")
    make.add_argument("--alignment", required=True, help="Pharaoh links over 13a tokens")
    make.add_argument("--train-source", required=True, help="raw training source (.gz read)")
    make.add_argument("--train-target", required=True, help="raw training target (.gz read)")
    make.add_argument("--out", required=True, help="folder for glossary.tsv, terms.txt")
    make.add_argument("--stopwords", type=int, default=100, help="most frequent training words")
    make.add_argument("--per-sentence", type=int, default=2, help="candidates kept a sentence")
    args = parser.parse_args(argv)
    if args.command == "tokenize":
        tokenize(args.input, args.output)
    else:
        build(args)


if __name__ == "__main__":
    main()
