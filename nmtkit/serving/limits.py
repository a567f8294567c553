"""The bounds of a translation server: request size, queued work, batching and search width."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nmtkit.errors import ConfigError

# A JSON string may spell one character in up to 12 bytes: a surrogate pair, as two 6-byte
# \u escapes.
_BYTES_PER_CHAR = 12
_BODY_SLACK = 64 * 1024  # the search settings, the brackets and any whitespace around them


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeLimits:
    """What one server accepts and how it batches.

    Attributes:
        max_sentences: sentences per request (more: 413).
        max_chars: characters per sentence (more: 413).
        max_queue: sentences accepted and not yet answered, all requests together; a request
            that would go over it is refused (429) instead of waiting.
        max_beam: the most hypotheses per sentence a request may ask for (beam size or
            samples; more: 422).
        batch_wait_ms: how long the oldest waiting request waits for others to share its batch.
        max_batch_sentences: the most sentences decoded as one batch (whole requests are
            taken; a request larger than this is a batch of its own).

    Raises:
        ConfigError: a bound below 1 (``batch_wait_ms`` below 0), or ``max_queue`` below
            ``max_sentences``, which would refuse a request of the size allowed.
    """

    max_sentences: int = 64
    max_chars: int = 2000
    max_queue: int = 1024
    max_beam: int = 16
    batch_wait_ms: float = 5.0
    max_batch_sentences: int = 64

    def __post_init__(self) -> None:
        for flag, value in (
            ("--max-sentences", self.max_sentences),
            ("--max-chars", self.max_chars),
            ("--max-queue", self.max_queue),
            ("--max-beam", self.max_beam),
            ("--max-batch-sentences", self.max_batch_sentences),
        ):
            if value < 1:
                raise ConfigError(f"{flag} must be at least 1, got {value}")
        if not self.batch_wait_ms >= 0:  # NaN too
            raise ConfigError(f"--batch-wait-ms must be 0 or more, got {self.batch_wait_ms}")
        if self.max_queue < self.max_sentences:
            raise ConfigError(
                f"--max-queue ({self.max_queue}) must be at least --max-sentences "
                f"({self.max_sentences}): a request of the size allowed could never be queued"
            )

    @classmethod
    def of(
        cls,
        *,
        max_sentences: int | None = None,
        max_chars: int | None = None,
        max_queue: int | None = None,
        max_beam: int | None = None,
        batch_wait_ms: float | None = None,
        max_batch_sentences: int | None = None,
    ) -> ServeLimits:
        """The limits given, and the defaults for those that are None."""
        given: dict[str, Any] = {
            "max_sentences": max_sentences,
            "max_chars": max_chars,
            "max_queue": max_queue,
            "max_beam": max_beam,
            "batch_wait_ms": batch_wait_ms,
            "max_batch_sentences": max_batch_sentences,
        }
        return cls(**{key: value for key, value in given.items() if value is not None})

    @property
    def max_body_bytes(self) -> int:
        """The largest request body read: room for ``max_sentences`` sentences of
        ``max_chars`` characters, however they are escaped (more: 413 before parsing)."""
        return self.max_sentences * (self.max_chars * _BYTES_PER_CHAR + 8) + _BODY_SLACK
