"""Precision choice and the allocator setting."""

from __future__ import annotations

import pytest
import torch

from nmtkit.config import load_config
from nmtkit.errors import ConfigError
from nmtkit.runtime import autocast, native_bf16, resolve_precision, tune_allocator


def test_auto_follows_the_cpu_and_explicit_choices_stay() -> None:
    assert resolve_precision("auto") == ("bf16" if native_bf16() else "fp32")
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("bf16") == "bf16"
    with pytest.raises(ConfigError, match="precision must be one of"):
        resolve_precision("fp16")


def test_config_rejects_an_unknown_precision() -> None:
    with pytest.raises(ConfigError, match="train.precision"):
        load_config(overrides=["train.precision=half"])
    assert load_config(overrides=["search.precision=bf16"]).search.precision == "bf16"


def test_autocast_runs_matrix_products_in_bf16_only_when_asked() -> None:
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with autocast("bf16"):
        assert (a @ b).dtype == torch.bfloat16
    with autocast("fp32"):
        assert (a @ b).dtype == torch.float32


def test_tune_allocator_is_idempotent() -> None:
    assert tune_allocator() == tune_allocator()
