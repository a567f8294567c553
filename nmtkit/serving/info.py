"""What ``GET /model`` tells a client: the model (its file's SHA-256, config, languages,
vocabularies; each member of an ensemble), the nmtkit version, the default search and the
server's limits."""

from __future__ import annotations

import dataclasses
from typing import Any

from nmtkit import __version__
from nmtkit.data.datadir import sha256_file
from nmtkit.search.overrides import describe_search
from nmtkit.serving.limits import ServeLimits
from nmtkit.serving.variants import Decoding
from nmtkit.translation.translator import Translator


def describe_model(
    translator: Translator, *, default: Decoding, limits: ServeLimits
) -> dict[str, Any]:
    """The server's description, computed once at start (hashing the checkpoint file).

    ``models`` lists the checkpoint (several for an ensemble, the first giving the config,
    vocabularies and search), each with the SHA-256 of its file's bytes (what ``sha256sum``
    prints), so two servers with equal ones run the same weights. ``vocabulary_fingerprint``
    is equal for models whose piece ids mean the same pieces. ``search.signature`` is the
    decode signature that ``translate`` logs.
    """
    loaded = translator.loaded
    spec = default.spec
    return {
        "nmtkit_version": __version__,
        "models": [
            {"path": str(member.path), "sha256": sha256_file(member.path), "step": member.step}
            for member in translator.members
        ],
        "src_lang": loaded.vocab.src_lang,
        "tgt_lang": loaded.vocab.tgt_lang,
        "src_vocab_size": loaded.src_text.vocab_size,
        "tgt_vocab_size": loaded.tgt_text.vocab_size,
        "vocabulary_fingerprint": loaded.vocab.fingerprint,
        "config": loaded.config.to_dict(),
        "search": {
            "strategy": spec.name,
            "options": dataclasses.asdict(spec.options),
            "signature": describe_search(spec, precision=translator.precision),
            "precision": translator.precision,
            "batch_size": translator.batch_size,
            "max_len_a": translator.max_len_a,
            "max_len_b": translator.max_len_b,
            "max_tokens": translator.lengths.max_tokens,
            "max_source_len": translator.lengths.max_source_len,
            "shortlist": translator.shortlist is not None,
        },
        "limits": dataclasses.asdict(limits),
    }
