"""The range checks of translation's options, shared by :class:`~nmtkit.translation.
translator.Translator` and ``nmtkit translate`` (which checks them before a model loads)."""

from __future__ import annotations

from nmtkit.errors import ConfigError


def check_options(
    *,
    batch_size: int | None = None,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    chunk_size: int | None = None,
    flush_ms: float | None = None,
    workers: int | None = None,
) -> None:
    """Reject translation options out of range (None: not given), naming their flags.

    Raises:
        ConfigError: a batch or chunk size or a number of workers below 1, or a negative
            ``max_len_a``, ``max_len_b`` or ``flush_ms``.
    """
    for flag, value in (
        ("--batch-size", batch_size),
        ("--chunk-size", chunk_size),
        ("--workers", workers),
    ):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be at least 1, got {value}")
    for flag, bound in (
        ("--max-len-a", max_len_a),
        ("--max-len-b", max_len_b),
        ("--flush-ms", flush_ms),
    ):
        if bound is not None and bound < 0:
            raise ConfigError(f"{flag} must be 0 or more, got {bound}")
