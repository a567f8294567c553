"""Per-request search settings: checked and resolved to a :class:`Decoding` (the key that
batches are grouped by), and one Translator per Decoding over the server's loaded model."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass

from nmtkit.config import ComponentSpec
from nmtkit.errors import ConfigError
from nmtkit.search.decode import build_strategy
from nmtkit.search.overrides import (
    SearchOverrides,
    describe_search,
    max_hypotheses,
    resolve_search,
)
from nmtkit.terminology.glossary import Glossary, Term
from nmtkit.translation.results import Translation
from nmtkit.translation.translator import Translator

DEFAULT_CAPACITY = 32  # Translators kept (each is a few small objects over the shared model)


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchSettings:
    """What one request asks of the search; None (or False) keeps the server's setting, which
    is the model's own. The fields are ``translate``'s options of the same names
    (``beam_size`` is ``--beam``)."""

    beam_size: int | None = None
    greedy: bool = False
    length_penalty: float | None = None
    coverage_penalty: float | None = None
    early_stop: bool | None = None
    sampling: bool = False
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None
    nbest: int = 1
    alignment: bool = False
    attention: bool = False
    term_placement: str | None = None

    def overrides(self) -> SearchOverrides:
        return SearchOverrides(
            beam=self.beam_size,
            greedy=self.greedy,
            length_penalty=self.length_penalty,
            coverage_penalty=self.coverage_penalty,
            early_stopping=self.early_stop,
            term_placement=self.term_placement,
            sampling=self.sampling,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            seed=self.seed,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Sentence:
    """One sentence of a request: its raw text, forced target prefix ('' for none), the target
    phrases it must contain and the glossary it follows (None: none)."""

    text: str
    prefix: str = ""
    constraints: tuple[Term, ...] = ()
    glossary: Glossary | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Decoding:
    """A resolved search: requests with equal Decodings are decoded in the same batches.
    ``alignment``: the translations keep their attention (for links, attention or both).

    ``signature`` is :func:`~nmtkit.search.overrides.describe_search` of ``spec``, which names
    the strategy and every option, so equal signatures mean the same search.
    """

    signature: str
    nbest: int
    alignment: bool
    constrainable: bool  # beam search of a beam of 2 or more: constraints and glossaries apply
    spec: ComponentSpec = dataclasses.field(compare=False)


class TranslatorPool:
    """Translators for every Decoding over the ``base`` translator's loaded model (or
    ensemble): its batch size, output cap, length policy, precision and shortlist, each
    request's search, n-best and alignment (a request without settings gets the model's own
    search, not the base's). They are made on the worker thread when first used; the most
    recently used ``capacity`` are kept.

    Raises:
        ConfigError: the model's own search keeps more hypotheses than ``max_beam``.
    """

    def __init__(
        self, base: Translator, *, max_beam: int, capacity: int = DEFAULT_CAPACITY
    ) -> None:
        self.base = base
        self.max_beam = max_beam
        self.capacity = capacity
        self.default = self.resolve(SearchSettings())
        self._translators: OrderedDict[Decoding, Translator] = OrderedDict()

    def resolve(self, settings: SearchSettings) -> Decoding:
        """The Decoding a request's settings make of the model's search (pure Python: it runs
        on the event loop).

        Raises:
            ConfigError: settings that conflict or are out of range (as ``translate`` reports
                them), more hypotheses than ``max_beam``, or ``nbest`` above the hypotheses kept.
        """
        model_search = self.base.loaded.config.search.strategy
        spec = resolve_search(model_search, settings.overrides(), nbest=settings.nbest)
        width = max_hypotheses(spec)
        if width > self.max_beam:
            raise ConfigError(
                f"the search keeps {width} hypotheses per sentence (beam size or samples); "
                f"this server allows at most {self.max_beam} (--max-beam)"
            )
        if not 1 <= settings.nbest <= width:
            raise ConfigError(
                f"nbest must be between 1 and the beam size or number of samples ({width}), "
                f"got {settings.nbest}"
            )
        return Decoding(
            signature=describe_search(spec),
            constrainable=spec.name == "beam" and width >= 2,
            nbest=settings.nbest,
            alignment=settings.alignment or settings.attention,
            spec=spec,
        )

    def translate(self, decoding: Decoding, sentences: list[Sentence]) -> list[Translation]:
        """Translate one batch of sentences with ``decoding`` (on the worker thread)."""
        return self.translator(decoding).translate_chunk(
            [sentence.text for sentence in sentences],
            prefixes=[sentence.prefix for sentence in sentences],
            constraints=[sentence.constraints for sentence in sentences],
            glossaries=[sentence.glossary for sentence in sentences],
        )

    def translator(self, decoding: Decoding) -> Translator:
        """The Translator of ``decoding``, made on first use."""
        found = self._translators.get(decoding)
        if found is None:
            found = self._make(decoding)
            self._translators[decoding] = found
            while len(self._translators) > self.capacity:
                self._translators.popitem(last=False)
        self._translators.move_to_end(decoding)
        return found

    def _make(self, decoding: Decoding) -> Translator:
        base = self.base
        return Translator(
            base.loaded,
            strategy=build_strategy(decoding.spec),
            batch_size=base.batch_size,
            max_len_a=base.max_len_a,
            max_len_b=base.max_len_b,
            nbest=decoding.nbest,
            with_alignment=decoding.alignment,
            precision=base.precision,  # resolved; int8 quantizes nothing a second time
            lengths=base.lengths,
            shortlist=base.shortlist,
            ensemble_with=base.members[1:],
        )
