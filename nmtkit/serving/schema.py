"""The JSON the server reads and writes (pydantic models, shown at ``/docs``), and the
conversions between them and nmtkit's values."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.serving.variants import SearchSettings
from nmtkit.translation.results import Candidate, Translation, WordAttention

_SETTING = "{} (translate's {}); default: the model's."


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

    def settings(self) -> SearchSettings:
        fields = self.model_dump(exclude={"text", "prefix"})
        return SearchSettings(**fields)


class AttentionOut(BaseModel):
    source: list[str] = Field(description="The source words (tokenized, as links number them).")
    target: list[str] = Field(description="The target words (tokenized).")
    weights: list[list[float]] = Field(
        description="One row per target word, one weight per source word; each row sums to 1."
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
    )


def _attention(attention: WordAttention) -> AttentionOut:
    return AttentionOut(
        source=list(attention.source),
        target=list(attention.target),
        weights=attention.weights.round(ATTENTION_DIGITS).tolist(),
    )
