"""Sentence splitting (``translate --split-sentences``): lines cut into sentences with sentencex
(Wikimedia's rule-based segmenter) and their translations joined back in the line's layout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtkit.alignment.links import Link
from nmtkit.errors import ConfigError
from nmtkit.translation.results import Candidate, Part

PREFIX_WITH_SPLITTING = "--prefix cannot be used with --split-sentences"


def check_splitting(
    *, split_sentences: bool, nbest: int = 1, prefix_path: str | Path | None = None
) -> None:
    """Reject what sentence splitting cannot do: the n-best list of a joined line is not
    defined, and a prefix belongs to a whole line, not to one of its sentences.

    Raises:
        ConfigError: ``nbest`` above 1 or a prefix file, with ``split_sentences``.
    """
    if not split_sentences:
        return
    if nbest > 1:
        raise ConfigError("--nbest above 1 cannot be used with --split-sentences")
    if prefix_path is not None:
        raise ConfigError(PREFIX_WITH_SPLITTING)


@dataclass(frozen=True, kw_only=True, slots=True)
class SplitLine:
    """A line cut into sentences, with the whitespace around them:
    ``line == lead + sentences[0] + gaps[0] + ... + sentences[-1] + gaps[-1]``.

    No sentence is empty or starts or ends with whitespace; ``lead`` and every gap are whitespace
    only (a gap may be empty), and the last gap is the line's trailing whitespace. An empty or
    whitespace-only line has no sentences (and all of it is ``lead``).
    """

    lead: str
    sentences: tuple[str, ...]
    gaps: tuple[str, ...]

    def join(self, texts: Sequence[str]) -> str:
        """Lay out one text per sentence as the sentences were laid out in the line.

        Returns ``lead + texts[0] + gaps[0] + ... + texts[-1] + gaps[-1]``, so that joining the
        sentences themselves gives the line back; '' when every text is '' (an empty line, or
        one with only empty translations, stays empty, as without splitting).
        """
        if len(texts) != len(self.sentences):
            raise ValueError(f"{len(texts)} texts for {len(self.sentences)} sentences")
        if not any(texts):
            return ""
        return self.lead + "".join(text + gap for text, gap in zip(texts, self.gaps, strict=True))


class SentenceSplitter:
    """Cut lines into sentences with sentencex's rules for one language.

    Args:
        lang: language code, e.g. ``"en"`` (the model's source language); sentencex falls back
            to related languages, and to English rules, for a code it has no rules for.
    """

    def __init__(self, lang: str) -> None:
        from sentencex import segment  # only when splitting is asked for: start-up stays fast

        self.lang = lang
        self._segment: Callable[[str, str], Iterable[str]] = segment

    def split(self, line: str) -> SplitLine:
        """Cut ``line`` into its sentences and the whitespace between them.

        The layout is taken from ``line`` itself: should sentencex's parts not join back to
        the line, the line is kept as one sentence.
        """
        parts = list(self._segment(self.lang, line))
        if "".join(parts) != line:
            parts = [line]
        lead = ""
        sentences: list[str] = []
        gaps: list[str] = []
        for part in parts:
            core = part.strip()
            start = len(part) - len(part.lstrip())
            # Whitespace before a sentence (or a part of whitespace alone) joins the gap before.
            before = part[:start] if core else part
            if gaps:
                gaps[-1] += before
            else:
                lead += before
            if core:
                sentences.append(core)
                gaps.append(part[start + len(core) :])
        return SplitLine(lead=lead, sentences=tuple(sentences), gaps=tuple(gaps))


def join_parts(
    split: SplitLine,
    parts: Sequence[Part],
    *,
    num_src_words: Sequence[int],
    num_tgt_words: Sequence[int],
) -> Candidate:
    """Join the translations of a line's sentences into the line's translation.

    Its text lays out the parts' texts as the sentences were laid out (:meth:`SplitLine.join`),
    its score is the sum of theirs, its links are theirs renumbered to words of the whole
    line (:func:`join_links`; None when a part has none), and its terms are theirs.

    Args:
        num_src_words: each sentence's source words (as its links count them).
        num_tgt_words: each part's translation's words (as its links count them).
    """
    candidates = [part.candidate for part in parts]
    links = None
    if all(c.links is not None for c in candidates):
        links = join_links(
            [c.links or () for c in candidates],
            num_src_words=num_src_words,
            num_tgt_words=num_tgt_words,
        )
    return Candidate(
        text=split.join([c.text for c in candidates]),
        score=sum((c.score for c in candidates), 0.0),
        links=links,
        terms=tuple(term for c in candidates for term in c.terms),
    )


def join_links(
    links: Sequence[Iterable[Link]],
    *,
    num_src_words: Sequence[int],
    num_tgt_words: Sequence[int],
) -> tuple[Link, ...]:
    """Join the word alignments of consecutive sentences into one alignment of the whole line.

    A link (i, j) of sentence k moves to (i + the source words of sentences 0..k-1,
    j + their target words), so the result is a Pharaoh alignment of the joined source and the
    joined translation, word for word.

    Args:
        links: each sentence's links, (source word, target word), 0-based.
        num_src_words: each sentence's source words.
        num_tgt_words: each sentence's translation's words.
    """
    joined: list[Link] = []
    src_offset = tgt_offset = 0
    for part, num_src, num_tgt in zip(links, num_src_words, num_tgt_words, strict=True):
        joined.extend((i + src_offset, j + tgt_offset) for i, j in part)
        src_offset += num_src
        tgt_offset += num_tgt
    return tuple(joined)
