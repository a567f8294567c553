"""Seq2Seq: source embedding, a registered encoder, and a registered decoder with its attention."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import torch
from torch import Tensor, nn

from nmtkit import registry
from nmtkit.config import ModelConfig
from nmtkit.errors import ConfigError
from nmtkit.models.initialization import initialize
from nmtkit.models.loss import linear_cross_entropy, smoothed_cross_entropy
from nmtkit.models.quantization import has_int8_weight
from nmtkit.models.word_dropout import WordDropout
from nmtkit.registry import Batch, DecoderState, EncoderOutput, ShortlistRows, StepOutput

# Logits computed at once by target_log_probs: 32 Mi floats (128 MiB), a batch of ordinary
# sentences in one block (8192 positions at V = 8000), a long line in several.
OUTPUT_BLOCK = 1 << 25


class Seq2Seq(nn.Module):
    """An encoder–decoder translation model assembled from registry components."""

    def __init__(
        self, config: ModelConfig, *, src_vocab_size: int, tgt_vocab_size: int, pad_id: int
    ) -> None:
        super().__init__()
        self.config = config
        self.pad_id = pad_id
        self.tgt_vocab_size = tgt_vocab_size
        self.src_embed = nn.Embedding(src_vocab_size, config.embed_size)
        self.encoder = registry.get("encoder", config.encoder.name)(
            config.encoder.options, input_size=config.embed_size
        )
        attention = registry.get("attention", config.attention.name)(
            config.attention.options,
            query_size=config.decoder.options.hidden_size,
            key_size=self.encoder.output_size,
        )
        self.decoder = registry.get("decoder", config.decoder.name)(
            config.decoder.options,
            vocab_size=tgt_vocab_size,
            embed_size=config.embed_size,
            annotation_size=self.encoder.output_size,
            summary_size=self.encoder.summary_size,
            attention=attention,
            dropout=config.dropout,
        )
        if config.share_embeddings:
            self.src_embed = self._shared_embedding(src_vocab_size, tgt_vocab_size)
        self.dropout = nn.Dropout(config.dropout)
        # on the annotations h_j: model.dropout_annotations
        self.annotation_dropout = nn.Dropout(config.dropout) if config.dropout_annotations else None
        self.word_dropout = WordDropout(config.source_word_dropout)  # whole source words

    def _shared_embedding(self, src_vocab_size: int, tgt_vocab_size: int) -> nn.Embedding:
        """The decoder's target embedding, for the source side too (``share_embeddings``).

        Raises:
            ConfigError: the vocabularies differ in size, or the decoder has no embedding.
        """
        shared = self.decoder.target_embedding()
        if shared is None:
            raise ConfigError(
                f"decoder {self.config.decoder.name} has no target embedding to share",
                where="model.share_embeddings",
            )
        if src_vocab_size != tgt_vocab_size:
            raise ConfigError(
                f"share_embeddings needs one vocabulary for both sides, got {src_vocab_size} "
                f"source and {tgt_vocab_size} target pieces",
                where="model.share_embeddings",
                hint="preprocess with --joint (the default) and --keep-target-vocab",
            )
        return shared

    def model_dropouts(self) -> list[nn.Dropout]:
        """The dropouts that ``model.dropout`` sets: on the source embeddings, on the
        annotations (``dropout_annotations``), and every one of the decoder's (it is given that
        one probability: target embeddings, the readout)."""
        own = [self.dropout, self.annotation_dropout]
        return [m for m in (*own, *self.decoder.modules()) if isinstance(m, nn.Dropout)]

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Draw every parameter as ``model.init`` says (:func:`~nmtkit.models.initialization.
        initialize`): uniform(-init_scale, init_scale), or the paper's scheme."""
        initialize(self, scheme=self.config.init, scale=self.config.init_scale, generator=generator)

    def encode(self, src: Tensor, lengths: Tensor) -> EncoderOutput:
        """Encode source ids [B, S] (each ending in EOS) of real lengths [B]."""
        pad_mask = src == self.pad_id  # [B, S]
        embedded = self.dropout(self.word_dropout(self.src_embed(src)))  # [B, S, E]
        out = self.encoder(embedded, lengths, pad_mask)
        if self.annotation_dropout is None:
            return out
        return dataclasses.replace(out, annotations=self.annotation_dropout(out.annotations))

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState:
        return self.decoder.init_state(encoder_out)

    def decode_step(
        self, prev_tokens: Tensor, state: DecoderState, *, shortlist: ShortlistRows | None = None
    ) -> StepOutput:
        """One decoding step; ``shortlist`` (:meth:`shortlist_rows`) restricts the output to its
        candidates (:meth:`nmtkit.registry.Decoder.shortlist_step`)."""
        if shortlist is None:
            return self.decoder.step(prev_tokens, state)
        return self.decoder.shortlist_step(prev_tokens, state, rows=shortlist)

    def shortlist_rows(self, ids: Tensor) -> ShortlistRows:
        """The candidates ``ids`` [V'] (ascending) with their rows of the output layer, when it
        is one float linear layer: cut once per batch, read at every step."""
        layer = self.output_layer()
        if layer is None:
            return ShortlistRows(ids=ids)
        bias = None if layer.bias is None else layer.bias.index_select(0, ids)  # [V']
        return ShortlistRows(ids=ids, weight=layer.weight.index_select(0, ids), bias=bias)

    def output_layer(self) -> nn.Linear | None:
        """The decoder's output layer (:meth:`nmtkit.registry.Decoder.output_layer`) unless it
        has none or int8 weights (:func:`nmtkit.models.quantization.quantize_int8`), whose rows
        cannot be cut or trained."""
        layer = self.decoder.output_layer()
        return None if layer is None or has_int8_weight(layer) else layer

    def forward(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """Teacher-forced logits of the real target positions [N, V] and weights [B, T, S]."""
        readout, _, weights = self._real_readout(batch)
        return self.decoder.logits(readout), weights  # [N, V]

    def _real_readout(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
        """Teacher-forced readout vectors of the real target positions [N, M], their target
        words [N], and the weights [B, T, S]. Only real positions go on to the output layer,
        the V-wide layer that is the largest matmul."""
        out = self.decoder(batch.tgt_in, self.encode(batch.src, batch.src_lengths))
        real = batch.tgt_out != self.pad_id  # [B, T]
        return out.readout[real], batch.tgt_out[real], out.weights

    def target_log_probs(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """Teacher-forced log p(y_i | y_<i, x) of the real target words [N] and the weights
        [B, T, S]. The output layer runs over :data:`OUTPUT_BLOCK` logits at a time, so the
        [N, V] logits of a long sentence are never whole."""
        readout, targets, weights = self._real_readout(batch)  # [N, M], [N]
        rows = max(1, OUTPUT_BLOCK // self.tgt_vocab_size)
        picked = [
            self.decoder.logits(block).float().log_softmax(dim=-1).gather(1, gold[:, None])
            for block, gold in zip(readout.split(rows), targets.split(rows), strict=True)
        ]  # [n, 1] each
        return torch.cat(picked).squeeze(1), weights  # [N]

    def loss(self, batch: Batch, *, label_smoothing: float = 0.0) -> tuple[Tensor, Tensor]:
        """Return the summed smoothed loss and the summed NLL over real target tokens."""
        readout, targets, _ = self._real_readout(batch)  # [N, M], [N]
        layer = self.output_layer()
        if layer is None:
            return smoothed_cross_entropy(self.decoder.logits(readout), targets, label_smoothing)
        return linear_cross_entropy(readout, layer.weight, layer.bias, targets, label_smoothing)

    def force_decode(self, batch: Batch) -> Tensor:
        """Attention weights [B, T, S] of teacher-forced decoding of ``batch.tgt_in``."""
        encoder_out = self.encode(batch.src, batch.src_lengths)
        return self.decoder(batch.tgt_in, encoder_out).weights

    def force_decode_blocks(self, batch: Batch, *, block: int) -> Iterator[Tensor]:
        """:meth:`force_decode`'s weights ``block`` target steps at a time, [B, <=block, S]
        each (:meth:`nmtkit.registry.Decoder.attention_blocks`)."""
        encoder_out = self.encode(batch.src, batch.src_lengths)
        yield from self.decoder.attention_blocks(batch.tgt_in, encoder_out, block=block)


def build_model(
    config: ModelConfig, *, src_vocab_size: int, tgt_vocab_size: int, pad_id: int
) -> Seq2Seq:
    """Build a model with freshly initialized parameters."""
    model = Seq2Seq(
        config, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, pad_id=pad_id
    )
    model.reset_parameters()
    return model
