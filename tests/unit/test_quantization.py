"""Int8 weights through torchao: which layers turn int8, what they store, what the step computes
(skipped only where torchao cannot be imported), and the error without torchao."""

from __future__ import annotations

import copy
import sys

import pytest
import torch
from torch import nn

from nmtkit.config import load_config
from nmtkit.data.batching import collate
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq, build_model
from nmtkit.models.quantization import MIN_WIDTH, quantize_int8

VOCAB = 40


@pytest.fixture(scope="module")
def torchao() -> object:
    return pytest.importorskip("torchao")


def tiny_model() -> Seq2Seq:
    torch.manual_seed(0)
    config = load_config(preset="tiny")
    model = build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0)
    return model.eval()


def linear_layers(module: nn.Module) -> dict[str, nn.Linear]:
    return {name: m for name, m in module.named_modules() if isinstance(m, nn.Linear)}


def test_int8_stores_the_decoders_linear_weights_as_int8_and_leaves_the_rest(
    torchao: object,
) -> None:
    model = tiny_model()
    before = {name: p.detach().clone() for name, p in model.encoder.named_parameters()}
    names = quantize_int8(model)
    layers = linear_layers(model.decoder)
    wide = {n for n, m in layers.items() if min(m.in_features, m.out_features) >= MIN_WIDTH}
    assert names == [f"decoder.{n}" for n in layers if n in wide]
    assert {"output", "hidden_to_gates", "attention.query_proj"} <= wide
    for name, layer in layers.items():
        if name in wide:
            assert layer.weight.qdata.dtype == torch.int8, name  # int8 storage, row scales
            assert layer.weight.qdata.shape == (layer.out_features, layer.in_features)
        else:  # the attention's v_a, [A] -> 1, which the score also sums itself
            assert type(layer.weight) is nn.Parameter and layer.weight.dtype == torch.float32
    after = dict(model.encoder.named_parameters())
    assert all(torch.equal(after[name], value) for name, value in before.items())
    assert quantize_int8(model) == []  # a second call finds nothing left to convert


def test_int8_log_probs_stay_close_to_fp32(torchao: object) -> None:
    model = tiny_model()
    quantized = copy.deepcopy(model)
    quantize_int8(quantized)
    batch = collate([[5, 6, 7, 8, 2], [9, 10, 2]], [[11, 12, 2], [13, 2]], [0, 1])
    with torch.inference_mode():
        expected, got = (
            m.decode_step(batch.tgt_in[:, 0], m.init_state(m.encode(batch.src, batch.src_lengths)))
            for m in (model, quantized)
        )
    assert got.log_probs.shape == expected.log_probs.shape == (2, VOCAB)
    assert torch.allclose(got.log_probs, expected.log_probs, atol=0.05)
    assert torch.allclose(got.weights, expected.weights, atol=0.01)


def test_without_torchao_int8_is_one_config_error_naming_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("torchao", "torchao.quantization", "torchao.utils"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    with pytest.raises(ConfigError) as caught:
        quantize_int8(tiny_model())
    assert "pip install torchao" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_int8_marks_the_layers_it_converts_and_a_shortlist_then_projects_onto_all_rows(
    torchao: object,
) -> None:
    from nmtkit.models.quantization import has_int8_weight

    model = tiny_model()
    assert model.output_layer() is model.decoder.output
    quantize_int8(model)
    layers = linear_layers(model.decoder)
    assert has_int8_weight(layers["output"])
    for name, layer in layers.items():  # every converted layer is marked, and only those
        wide = min(layer.in_features, layer.out_features) >= MIN_WIDTH
        assert has_int8_weight(layer) == wide, name
    assert model.output_layer() is None  # int8 rows cannot be cut, nor trained
    ids = torch.tensor([0, 1, 2, 3, 7, 11, 30])
    rows = model.shortlist_rows(ids)
    assert rows.weight is None and rows.bias is None
    batch = collate([[5, 6, 7, 8, 2], [9, 10, 2]], [[11, 12, 2], [13, 2]], [0, 1])
    with torch.inference_mode():
        state = model.init_state(model.encode(batch.src, batch.src_lengths))
        full = model.decode_step(batch.tgt_in[:, 0], state)
        listed = model.decode_step(batch.tgt_in[:, 0], state, shortlist=rows)
    assert torch.allclose(listed.log_probs, full.log_probs[:, ids].log_softmax(-1), atol=1e-5)
