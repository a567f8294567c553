"""The JSON the server reads and writes (pydantic models, shown at ``/docs``), and the
conversions between them and nmtkit's values."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.serving.variants import SearchSettings
from nmtkit.translation.results import Candidate, Translation

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

    def lines(self) -> list[str]:
        return [self.text] if isinstance(self.text, str) else self.text

    def settings(self) -> SearchSettings:
        fields = self.model_dump(exclude={"text"})
        return SearchSettings(**fields)


class CandidateOut(BaseModel):
    text: str = Field(description="The translation, detokenized.")
    score: float = Field(description="Its score as the search ranked it (log-probability based).")
    alignment: str | None = Field(
        None,
        description="Pharaoh links 'i-j' (source word i, target word j, 0-based), when asked "
        "for and the model's attention is an alignment.",
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


def translation_out(item: Translation, *, nbest: bool) -> TranslationOut:
    """A translation as the API gives it: its best candidate, and all of them with ``nbest``."""
    best = item.candidates[0]
    return TranslationOut(
        **_candidate(best).model_dump(),
        nbest=[_candidate(c) for c in item.candidates] if nbest else None,
    )


def _candidate(candidate: Candidate) -> CandidateOut:
    links = candidate.links
    return CandidateOut(
        text=candidate.text,
        score=candidate.score,
        alignment=None if links is None else format_pharaoh(links),
    )
