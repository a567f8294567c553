"""Terminology: glossaries and per-line constraints that a translation must follow
(:mod:`nmtkit.terminology.glossary`), searched by lexically constrained beam search
(:mod:`nmtkit.search.constrained`)."""

from nmtkit.terminology.glossary import (
    Glossary,
    SentenceTerm,
    Term,
    parse_constraints,
    read_constraints,
    read_glossary,
)

__all__ = [
    "Glossary",
    "SentenceTerm",
    "Term",
    "parse_constraints",
    "read_constraints",
    "read_glossary",
]
