"""The JSON the server reads and writes (pydantic models, shown at ``/docs``), and the
conversions between them and nmtkit's values."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.serving.variants import SearchSettings
from nmtkit.terminology.glossary import Term
from nmtkit.translation.results import Candidate, Translation, WordAttention

_SETTING = "{} (translate's {}); default: the model's."


class TermIn(BaseModel):
    """One glossary entry of a request."""

    model_config = ConfigDict(extra="forbid", strict=True)

    source: str = Field(description="The source term.", examples=["platform"])
    target: str = Field(description="Its translation, used as written.", examples=["Bahnsteig"])


class TranslateRequest(BaseModel):
    """``POST /translate``: one sentence or a list, and optional search settings. Unknown
    keys and values of the wrong JSON type are refused (422)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    text: str | list[str] = Field(
        description="One sentence, or a list of sentences; raw text, as translate reads it.",
        examples=["A dog runs through the snow.", ["Two men are talking.", "A girl smiles."]],
    )
    beam_size: int | None = Field(None, description=_SETTING.format("Beam size", "--beam"))
    greedy: bool = Field(False, description="Greedy search instead of beam search (--greedy).")
    length_penalty: float | None = Field(
        None, description=_SETTING.format("Alpha of GNMT's length penalty", "--length-penalty")
    )
    coverage_penalty: float | None = Field(
        None, description=_SETTING.format("Beta of GNMT's coverage penalty", "--coverage-penalty")
    )
    early_stop: bool | None = Field(
        None, description=_SETTING.format("Beam: stop at beam-size finished", "--early-stop")
    )
    sampling: bool = Field(False, description="Sample instead of searching (--sampling).")
    temperature: float | None = Field(None, description="Sampling temperature (--temperature).")
    top_k: int | None = Field(None, description="Sampling: only the k most probable (--top-k).")
    top_p: float | None = Field(None, description="Sampling: nucleus mass p (--top-p).")
    seed: int | None = Field(None, ge=0, lt=2**63, description="Sampling seed (--seed).")
    nbest: int = Field(
        1, description="Hypotheses per sentence, listed under 'nbest' when above 1 (--nbest)."
    )
    alignment: bool = Field(
        False, description="Give each translation its word alignment, as Pharaoh i-j links."
    )
    attention: bool = Field(
        False,
        description="Give each translation its attention over words (the soft alignment the "
        "links are read off): its source and target words and a weight for each pair.",
    )
    prefix: str | list[str] | None = Field(
        None,
        description="Each sentence's forced target prefix, raw text ('' for none; translate's "
        "--prefix): a string for one sentence, a list as long as text's for a list.",
        examples=["Ein Hund"],
    )

    constraints: list[str] | list[list[str]] | None = Field(
        None,
        description="Target phrases each translation must contain (translate's --constraints; "
        "beam search only): a list of phrases for one sentence, a list of such lists, one per "
        "sentence, for a list.",
        examples=[["Bahnsteig"]],
    )
    terminology: list[TermIn] | None = Field(
        None,
        description="A glossary for this request instead of the server's (--terminology): "
        "every sentence whose source holds a source term (whole words, any case) uses its "
        "target term; [] for none. Beam search only.",
    )
    term_placement: str | None = Field(
        None, description=_SETTING.format("How a glossary term is placed", "--term-placement")
    )

    def lines(self) -> list[str]:
        return [self.text] if isinstance(self.text, str) else self.text

    def prefixes(self) -> list[str] | None:
        """One prefix per sentence, or None for none.

        Raises:
            ValueError: a prefix that does not match ``text`` (a list for a string, or
                another count of sentences).
        """
        if self.prefix is None:
            return None
        if isinstance(self.text, str) != isinstance(self.prefix, str):
            kind = "a string" if isinstance(self.text, str) else "a list"
            raise ValueError(f"prefix: should be {kind}, as text is")
        prefixes = [self.prefix] if isinstance(self.prefix, str) else self.prefix
        if len(prefixes) != len(self.lines()):
            raise ValueError(
                f"prefix: {len(prefixes)} prefixes for {len(self.lines())} sentences; give one "
                "per sentence, '' for none"
            )
        return prefixes

    def phrases(self) -> list[tuple[Term, ...]] | None:
        """Each sentence's constraints, or None for none.

        Raises:
            ValueError: constraints that do not match ``text`` (phrases for a list, lists for
                a string, or another count of sentences), or an empty phrase.
        """
        if self.constraints is None:
            return None
        one = isinstance(self.text, str)
        if self.constraints and one != all(isinstance(c, str) for c in self.constraints):
            kind = "a list of phrases" if one else "a list of lists of phrases, one per sentence"
            raise ValueError(f"constraints: should be {kind}, as text is")
        per_sentence = [self.constraints] if one else self.constraints
        if not one and len(per_sentence) != len(self.lines()):
            raise ValueError(
                f"constraints: {len(per_sentence)} lists for {len(self.lines())} sentences; "
                "give one per sentence, [] for none"
            )
        found = []
        for i, phrases in enumerate(per_sentence):
            assert isinstance(phrases, list)
            where = "constraints" if one else f"constraints[{i}]"
            if not all(str(phrase).strip() for phrase in phrases):
                raise ValueError(f"{where}: an empty phrase")
            found.append(tuple(Term(target=str(p).strip(), where=where) for p in phrases))
        return found

    def glossary_entries(self) -> list[Term] | None:
        """The request's glossary entries, or None for the server's.

        Raises:
            ValueError: an empty source or target term.
        """
        if self.terminology is None:
            return None
        entries = []
        for i, entry in enumerate(self.terminology):
            if not entry.source.strip() or not entry.target.strip():
                raise ValueError(f"terminology[{i}]: an empty term")
            entries.append(
                Term(
                    source=entry.source.strip(),
                    target=entry.target.strip(),
                    where=f"terminology[{i}]",
                )
            )
        return entries

    def settings(self) -> SearchSettings:
        fields = self.model_dump(exclude={"text", "prefix", "constraints", "terminology"})
        return SearchSettings(**fields)


class AttentionOut(BaseModel):
    source: list[str] = Field(description="The source words (tokenized, as links number them).")
    target: list[str] = Field(description="The target words (tokenized).")
    weights: list[list[float]] = Field(
        description="One row per target word, one weight per source word; each row sums to 1."
    )


class TermOut(BaseModel):
    target: str = Field(description="A target phrase the translation had to contain.")
    source: str | None = Field(
        None, description="Its source term (a glossary entry's); none for a bare constraint."
    )
    met: bool = Field(description="Whether the translation contains it.")
    aligned: bool | None = Field(
        None,
        description="With alignment: whether a link joins its words to its source term's.",
    )


class CandidateOut(BaseModel):
    text: str = Field(description="The translation, detokenized.")
    score: float = Field(description="Its score as the search ranked it (log-probability based).")
    alignment: str | None = Field(
        None,
        description="Pharaoh links 'i-j' (source word i, target word j, 0-based), when asked "
        "for and the model's attention is an alignment.",
    )
    attention: AttentionOut | None = Field(
        None, description="When asked for and the model's attention is an alignment."
    )
    terms: list[TermOut] | None = Field(
        None, description="Under constraints or a glossary: how it uses each term."
    )


class TranslationOut(CandidateOut):
    nbest: list[CandidateOut] | None = Field(
        None, description="With nbest above 1: every hypothesis kept, best first."
    )


class TranslateResponse(BaseModel):
    translations: list[TranslationOut] = Field(description="One per input sentence, in order.")


class Health(BaseModel):
    status: str = Field(description="'ok' while the server takes requests.")
    queued_sentences: int = Field(description="Sentences accepted and not yet answered.")
    batches: int = Field(description="Batches decoded since the start.")
    sentences: int = Field(description="Sentences decoded since the start.")


class ErrorBody(BaseModel):
    error: str = Field(description="What is wrong, in one line.")
    detail: list[dict[str, Any]] | None = Field(
        None, description="For 422: each invalid field, as pydantic reports it."
    )


ATTENTION_DIGITS = 4  # decimals of an attention weight in the JSON


def translation_out(
    item: Translation, *, nbest: bool, alignment: bool = True, attention: bool = False
) -> TranslationOut:
    """A translation as the API gives it: its best candidate, and all of them with ``nbest``;
    each with its links where it has them and ``alignment``, its word attention with
    ``attention``."""
    out = [_candidate(c, alignment=alignment, attention=attention) for c in item.candidates]
    return TranslationOut(**dict(out[0]), nbest=out if nbest else None)


def _candidate(candidate: Candidate, *, alignment: bool, attention: bool) -> CandidateOut:
    links, weights = candidate.links, candidate.attention
    return CandidateOut(
        text=candidate.text,
        score=candidate.score,
        alignment=None if links is None or not alignment else format_pharaoh(links),
        attention=None if weights is None or not attention else _attention(weights),
        terms=[
            TermOut(target=t.target, source=t.source, met=t.met, aligned=t.aligned)
            for t in candidate.terms
        ]
        or None,
    )


def _attention(attention: WordAttention) -> AttentionOut:
    return AttentionOut(
        source=list(attention.source),
        target=list(attention.target),
        weights=attention.weights.round(ATTENTION_DIGITS).tolist(),
    )
