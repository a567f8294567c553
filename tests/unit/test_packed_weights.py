"""packed16: the decoder's linear layers with fp16 weights packed for fbgemm compute the fp32
products of those rounded weights, keep their fp32 parameters (the shortlist cuts rows of them),
and search as the fp32 model does; ``auto`` takes it for search only on a CPU without native
bf16."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from nmtkit import runtime
from nmtkit.errors import ConfigError
from nmtkit.models.inference_weights import prepare_weights
from nmtkit.models.packed_weights import PackedFP16Linear, pack_fp16
from nmtkit.registry import Hypothesis
from nmtkit.runtime import packed16_available, resolve_precision, resolve_search_precision
from nmtkit.search.beam import BeamSearch
from nmtkit.search.decode import decode_sequences
from nmtkit.search.greedy import GreedySearch
from tests.unit.test_models import TINY_DECODERS, random_ids, tiny_model

needs_fbgemm = pytest.mark.skipif(not packed16_available(), reason="no fbgemm in this torch")


@needs_fbgemm
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 48), (2, 3, 48), (0, 48)], ids=["2d", "3d", "empty"])
def test_the_product_is_fp32_arithmetic_on_fp16_rounded_weights(
    bias: bool, shape: tuple[int, ...]
) -> None:
    torch.manual_seed(0)
    layer = nn.Linear(48, 40, bias=bias)
    x = torch.randn(shape)
    packed = PackedFP16Linear(layer)
    rounded_bias = None if layer.bias is None else layer.bias.detach()
    expected = F.linear(x, layer.weight.detach().half().float(), rounded_bias)
    got = packed(x)
    assert got.dtype == torch.float32 and got.shape == (*shape[:-1], 40)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert packed.weight is layer.weight and packed.bias is layer.bias  # fp32, the same tensors
    assert isinstance(packed, nn.Linear) and "fp16 packed" in repr(packed)


@needs_fbgemm
@pytest.mark.parametrize("decoder", ["gru", "cgru"])
def test_pack_fp16_converts_the_decoders_wide_layers_once(decoder: str) -> None:
    model = tiny_model(*TINY_DECODERS[decoder])
    before = {name: m.weight for name, m in model.decoder.named_modules() if type(m) is nn.Linear}
    folded, names = split_folded(prepare_weights(model, "packed16"))
    assert folded == ["decoder.input_from_embed", "decoder.readout_embed"]  # a table now
    assert "decoder.output" in names and "decoder.hidden_to_gates" in names
    assert ("decoder.proposal_to_gates" in names) == (decoder == "cgru")
    assert "decoder.attention.v" not in names and all(n.startswith("decoder.") for n in names)
    layers = dict(model.decoder.named_modules())
    for name in names:
        layer = layers[name.removeprefix("decoder.")]
        assert isinstance(layer, PackedFP16Linear)
        assert layer.weight is before[name.removeprefix("decoder.")]
    assert pack_fp16(model.decoder) == []  # nothing left to convert
    assert model.output_layer() is model.decoder.output  # the shortlist still cuts its rows


def split_folded(names: list[str]) -> tuple[list[str], list[str]]:
    """prepare_weights' names: the embedding products folded into a table, then the rest."""
    return names[:2], names[2:]


def search(model: torch.nn.Module, strategy: object, precision: str) -> list[list[Hypothesis]]:
    return decode_sequences(
        model,  # type: ignore[arg-type]
        [[*s, 3] for s in random_ids([3, 7, 12, 5, 9], seed=3)],
        strategy,  # type: ignore[arg-type]
        batch_size=2,
        max_len_a=1.5,
        max_len_b=3,
        with_weights=True,
        precision=precision,
    )


@needs_fbgemm
@pytest.mark.parametrize("decoder", ["gru", "cgru"])
def test_search_with_packed_weights_finds_what_fp32_finds(decoder: str) -> None:
    model = tiny_model("model.init_scale=0.5", *TINY_DECODERS[decoder])
    strategies = [BeamSearch(BeamSearch.Config(beam_size=3)), GreedySearch(GreedySearch.Config())]
    fp32 = [search(model, strategy, "fp32") for strategy in strategies]
    prepare_weights(model, "packed16")
    packed = [search(model, strategy, "packed16") for strategy in strategies]
    for found_fp32, found_packed in zip(fp32, packed, strict=True):
        for hyps_fp32, hyps_packed in zip(found_fp32, found_packed, strict=True):
            assert hyps_fp32[0].tokens == hyps_packed[0].tokens
            assert hyps_fp32[0].score == pytest.approx(hyps_packed[0].score, abs=1e-3)


@pytest.mark.parametrize(
    ("bf16", "fbgemm", "expected"),
    [(True, True, "bf16"), (False, True, "packed16"), (False, False, "fp32")],
)
def test_auto_searches_in_bf16_else_packed16_else_fp32(
    monkeypatch: pytest.MonkeyPatch, bf16: bool, fbgemm: bool, expected: str
) -> None:
    monkeypatch.setattr(runtime, "native_bf16", lambda device="cpu": bf16)
    monkeypatch.setattr(runtime, "packed16_available", lambda: fbgemm)
    assert resolve_search_precision("auto") == expected
    assert resolve_precision("auto") == ("bf16" if bf16 else "fp32")  # training's: unchanged
    assert resolve_search_precision("fp32") == "fp32"


def test_packed16_where_fbgemm_is_missing_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime, "packed16_available", lambda: False)
    with pytest.raises(ConfigError, match=r"^precision packed16 needs fbgemm on a CPU"):
        resolve_search_precision("packed16")
    monkeypatch.setattr(runtime, "packed16_available", lambda: True)
    with pytest.raises(ConfigError, match="packed16 needs fbgemm on a CPU"):
        resolve_search_precision("packed16", "cuda")


def test_configs_refuse_packed16_which_is_for_search_over_a_loaded_model() -> None:
    from nmtkit.config import load_config

    with pytest.raises(ConfigError, match="precision 'packed16' is for translation only"):
        load_config(preset="tiny", overrides=["search.precision=packed16"])
