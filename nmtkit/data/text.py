"""Text pipeline: Moses normalization and tokenization, SentencePiece subwords, corpus cleaning.

Special ids are fixed: SentencePiece models are trained with them, so spm ids are model ids.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import sentencepiece as spm
from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer

from nmtkit.data.dedup import DigestSet, pair_digests
from nmtkit.data.target_vocab import emitted_size
from nmtkit.errors import ConfigError, DataError, unknown_name

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3
SPECIAL_PIECES = ("<pad>", "<unk>", "<s>", "</s>")
SUBWORD_TYPES = ("bpe", "unigram")
WORD_START = "\u2581"  # SentencePiece's '▁', marking the first piece of a word

_DROPPED_ON_DECODE = frozenset({PAD_ID, BOS_ID, EOS_ID})


@dataclass(frozen=True, kw_only=True, slots=True)
class TextSettings:
    """How raw text is prepared before subword segmentation.

    Attributes:
        normalize: apply Moses punctuation normalization (sacremoses ``MosesPunctNormalizer``).
        moses_tokenize: Moses-tokenize before SentencePiece and detokenize after decoding.
        lowercase: lowercase the prepared text (not undone by ``decode``).
    """

    normalize: bool = True
    moses_tokenize: bool = False
    lowercase: bool = False

    def to_dict(self) -> dict[str, bool]:
        """Return the settings as a plain dict (for manifests and checkpoints)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object], *, where: str = "text") -> TextSettings:
        """Build settings from a plain dict (a manifest's or a checkpoint's), checked and coerced
        like every config section (:func:`nmtkit.config.build_dataclass`).

        Raises:
            ConfigError: an unknown key or a value of the wrong type.
        """
        # Imported here: nmtkit.config imports torch, which preprocess's worker processes,
        # importing this module, do without (half a second each to start instead of three).
        from nmtkit.config import build_dataclass

        settings: TextSettings = build_dataclass(cls, dict(data), where=where)
        return settings


class TextPreparer:
    """Prepare raw lines of one language for SentencePiece: normalize, Moses-tokenize, lowercase.

    Args:
        settings: which steps to apply.
        lang: language code for the Moses normalizer and tokenizer, e.g. ``"de"``.
    """

    def __init__(self, settings: TextSettings, lang: str) -> None:
        self.settings = settings
        self.lang = lang
        self._normalizer = MosesPunctNormalizer(lang) if settings.normalize else None
        self._tokenizer = MosesTokenizer(lang) if settings.moses_tokenize else None

    def prepare(self, line: str) -> str:
        """Normalize, Moses-tokenize and lowercase ``line`` as the settings say."""
        if self._normalizer is not None:
            line = self._normalizer.normalize(line)
        if self._tokenizer is not None:
            line = self._tokenizer.tokenize(line, escape=False, return_str=True)
        if self.settings.lowercase:
            line = line.lower()
        return line


class TextPipeline:
    """Turn raw lines of one language into subword ids and back (the OpenNMT transform contract).

    Args:
        settings: the preparation steps applied before SentencePiece.
        lang: language code for the Moses normalizer and tokenizer, e.g. ``"de"``.
        spm_model: serialized SentencePiece model proto (the bytes of a ``.model`` file).

    Raises:
        DataError: ``spm_model`` is not a SentencePiece model with nmtkit's special ids.
    """

    def __init__(self, settings: TextSettings, lang: str, spm_model: bytes) -> None:
        self.settings = settings
        self.lang = lang
        self._spm_model = bytes(spm_model)
        self._processor = load_sentencepiece(self._spm_model, where=f"spm model for '{lang}'")
        # A trimmed target model (nmtkit.data.target_vocab) writes the ids below this alone.
        self._vocab_size = emitted_size(self._processor)
        self._preparer = TextPreparer(settings, lang)
        self._detokenizer = MosesDetokenizer(lang) if settings.moses_tokenize else None

    def __reduce__(self) -> tuple[type, tuple[TextSettings, str, bytes]]:
        # Pickle by the constructor's arguments (sacremoses and spm objects rebuild themselves).
        return (TextPipeline, (self.settings, self.lang, self._spm_model))

    @property
    def vocab_size(self) -> int:
        """The number of subword ids, special ids included (of a trimmed target model, the
        ids it writes: :func:`nmtkit.data.target_vocab.emitted_size`)."""
        return self._vocab_size

    @property
    def spm_model(self) -> bytes:
        """The serialized SentencePiece model proto."""
        return self._spm_model

    def prepare(self, line: str) -> str:
        """Normalize, Moses-tokenize and lowercase ``line`` as the settings say."""
        return self._preparer.prepare(line)

    def encode(self, line: str) -> list[int]:
        """Return the subword ids of a raw line, without BOS or EOS."""
        return list(self._processor.encode(self.prepare(line)))

    def pieces(self, line: str) -> list[str]:
        """Return the subword pieces of a raw line, as ``encode`` segments it."""
        return list(self._processor.encode(self.prepare(line), out_type=str))

    def decode(self, ids: Iterable[int]) -> str:
        """Turn ids back into text: PAD, BOS and EOS are dropped, UNK shows as ' ⁇ '.

        Normalization and lowercasing are not undone; Moses tokenization is.
        """
        text = self._processor.decode([i for i in map(int, ids) if i not in _DROPPED_ON_DECODE])
        if self._detokenizer is not None:
            text = self._detokenizer.detokenize(text.split(), return_str=True, unescape=False)
        return str(text)

    def id_to_piece(self, ids: Iterable[int]) -> list[str]:
        """Return the piece of each id."""
        return [self._processor.id_to_piece(int(i)) for i in ids]


def load_sentencepiece(model: bytes, *, where: str) -> spm.SentencePieceProcessor:
    """Load a serialized SentencePiece model and check that it uses nmtkit's special ids.

    Raises:
        DataError: ``model`` is not a SentencePiece model, or has other special ids.
    """
    try:
        processor = spm.SentencePieceProcessor(model_proto=model)
    except RuntimeError:
        raise DataError("not a SentencePiece model", where=where) from None
    found = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
    if found != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
        raise DataError(
            f"SentencePiece model has special ids {found}, expected (0, 1, 2, 3)",
            where=where,
            hint="train it with nmtkit preprocess",
        )
    return processor


def word_index(pieces: Sequence[str]) -> list[int]:
    """Return the 0-based word number of each SentencePiece piece.

    A piece starting with '▁' starts a new word. A bare '▁' piece belongs to the following word,
    or to the previous one at the end of the sentence. The first piece is word 0 even without
    a mark.
    """
    index: list[int] = []
    word = -1
    previous_bare = False
    for position, piece in enumerate(pieces):
        if position == 0 or (piece.startswith(WORD_START) and not previous_bare):
            word += 1
        index.append(word)
        previous_bare = piece == WORD_START
    if word > 0 and all(p == WORD_START for p, w in zip(pieces, index, strict=True) if w == word):
        index = [min(w, word - 1) for w in index]
    return index


def words(pieces: Sequence[str]) -> list[str]:
    """Return the words that SentencePiece pieces spell, without '▁' marks (see ``word_index``)."""
    spelled: list[list[str]] = []
    for piece, word in zip(pieces, word_index(pieces), strict=True):
        if word == len(spelled):
            spelled.append([])
        spelled[word].append(piece)
    return ["".join(parts).replace(WORD_START, "") for parts in spelled]


def train_sentencepiece(
    lines: Iterable[str],
    *,
    model_type: str,
    vocab_size: int,
    seed: int = 1,
    character_coverage: float = 1.0,
) -> bytes:
    """Train a SentencePiece model in memory on prepared lines and return its serialized proto.

    Training is deterministic: all lines are used in order, and the same input gives the same bytes.
    ``vocab_size`` is an upper bound, so tiny corpora get a smaller vocabulary.

    Raises:
        ConfigError: an unknown ``model_type``, or a ``vocab_size`` too small for the characters.
        DataError: no usable training lines.
    """
    if model_type not in SUBWORD_TYPES:
        raise unknown_name("subword model", model_type, SUBWORD_TYPES, where="subword")
    if vocab_size <= len(SPECIAL_PIECES):
        raise ConfigError(f"vocab_size must exceed {len(SPECIAL_PIECES)}", where="vocab_size")
    spm.set_random_generator_seed(seed)
    writer = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=writer,
            model_type=model_type,
            vocab_size=vocab_size,
            character_coverage=character_coverage,
            input_sentence_size=0,
            shuffle_input_sentence=False,
            num_threads=2,
            minloglevel=2,
            hard_vocab_limit=False,
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            pad_piece=SPECIAL_PIECES[PAD_ID],
            unk_piece=SPECIAL_PIECES[UNK_ID],
            bos_piece=SPECIAL_PIECES[BOS_ID],
            eos_piece=SPECIAL_PIECES[EOS_ID],
        )
    except RuntimeError as exc:
        if "Vocabulary size is smaller than required_chars" in str(exc):
            raise ConfigError(
                f"vocab_size {vocab_size} is smaller than the number of distinct characters",
                where="vocab_size",
                hint="raise vocab_size",
            ) from None
        if "sentences_.empty()" in str(exc):
            raise DataError("no lines to train SentencePiece on") from None
        raise
    return writer.getvalue()


CLEAN_REASONS = (
    "invalid_utf8",
    "empty",
    "too_short",
    "too_long",
    "ratio",
    "duplicate",
    "too_many_pieces",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class CleanSettings:
    """Training-pair filters: those of Moses ``clean-corpus-n.perl`` on whitespace tokens of
    prepared text, and a bound on the SentencePiece pieces the model will see.

    Attributes:
        min_len: drop a pair with fewer tokens on either side (a side with none is "empty").
        max_len: drop a pair with more tokens on either side.
        max_ratio: drop a pair whose token counts differ by more than this factor, either way.
        dedup: drop exact repeats of a pair already kept (known by 64-bit digests of the
            prepared pairs, :mod:`nmtkit.data.dedup`).
        max_pieces: drop a pair with more SentencePiece pieces on either side, EOS not counted
            (checked after encoding: a long line without spaces is one token but many pieces).
            Validation and test sentences are cut to it instead, so that they stay line-parallel
            with their raw references.

    Raises:
        ConfigError: a bound below 1, or ``max_len`` below ``min_len``.
    """

    min_len: int = 1
    max_len: int = 250
    max_ratio: float = 9.0
    dedup: bool = False
    max_pieces: int = 250

    def __post_init__(self) -> None:
        if self.min_len < 1:
            raise ConfigError("min_len must be at least 1", where="clean.min_len")
        if self.max_len < self.min_len:
            raise ConfigError("max_len must be at least min_len", where="clean.max_len")
        if self.max_pieces < 1:
            raise ConfigError("max_pieces must be at least 1", where="clean.max_pieces")
        if self.max_ratio < 1:
            raise ConfigError("max_ratio must be at least 1", where="clean.max_ratio")


def clean_reason(src: str | None, tgt: str | None, settings: CleanSettings) -> str | None:
    """Return why a prepared pair must be dropped, or None to keep it (duplicates aside).

    ``None`` for a side means it was not valid UTF-8 (``read_lines(..., skip_invalid=True)``).
    """
    if src is None or tgt is None:
        return "invalid_utf8"
    num_src, num_tgt = len(src.split()), len(tgt.split())
    if num_src == 0 or num_tgt == 0:
        return "empty"
    if min(num_src, num_tgt) < settings.min_len:
        return "too_short"
    if max(num_src, num_tgt) > settings.max_len:
        return "too_long"
    if num_src / num_tgt > settings.max_ratio or num_tgt / num_src > settings.max_ratio:
        return "ratio"
    return None


class PairCleaner:
    """Decide which training pairs to keep, counting each reason to drop one.

    Pair by pair with :meth:`reason`; or, when worker processes apply ``clean_reason`` and digest
    the pairs (:func:`nmtkit.data.dedup.pair_digests`), chunk by chunk in corpus order with
    :meth:`count` and :meth:`keep_new`. Duplicates are found by 8-byte digests, never by lines.
    """

    def __init__(self, settings: CleanSettings) -> None:
        self.settings = settings
        self.counts: dict[str, int] = dict.fromkeys(CLEAN_REASONS, 0)
        self._seen = DigestSet()

    def reason(self, src: str | None, tgt: str | None) -> str | None:
        """Return why the prepared pair is dropped (and count it), or None if it is kept."""
        reason = clean_reason(src, tgt, self.settings)
        if reason is None and self.settings.dedup:
            assert src is not None and tgt is not None
            if not self._seen.add_new(pair_digests([src], [tgt]))[0]:
                reason = "duplicate"
        if reason is not None:
            self.counts[reason] += 1
        return reason

    def count(self, counts: Mapping[str, int]) -> None:
        """Add pairs dropped elsewhere by ``clean_reason``, by reason."""
        for reason, num in counts.items():
            self.counts[reason] += num

    def keep_new(self, digests: np.ndarray) -> list[bool]:
        """Return, for the digests [n] of pairs that passed ``clean_reason`` (in corpus order),
        whether each is kept: always without ``dedup``, else if no earlier pair repeats it
        (the repeats are counted as ``duplicate``)."""
        if not self.settings.dedup:
            return [True] * len(digests)
        kept = self._seen.add_new(digests)
        self.counts["duplicate"] += kept.count(False)
        return kept
