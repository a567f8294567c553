"""Precision choice and the allocator setting."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from nmtkit import runtime
from nmtkit.config import load_config
from nmtkit.errors import ConfigError, DataError
from nmtkit.runtime import (
    autocast,
    native_bf16,
    resolve_device,
    resolve_precision,
    tune_allocator,
)


def test_auto_follows_the_cpu_and_explicit_choices_stay() -> None:
    assert resolve_precision("auto") == ("bf16" if native_bf16() else "fp32")
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("bf16") == "bf16"
    assert resolve_precision("fp16") == "fp16"
    assert resolve_precision("int8") == "int8"
    assert resolve_precision("packed16") == "packed16"
    with pytest.raises(
        ConfigError,
        match="unknown precision 'half'; choose from auto, fp32, bf16, fp16, int8, packed16$",
    ):
        resolve_precision("half")


@pytest.mark.parametrize(("bf16", "expected"), [(True, "bf16"), (False, "fp16")])
def test_auto_on_a_cuda_gpu_is_bf16_where_supported_else_fp16(
    monkeypatch: pytest.MonkeyPatch, bf16: bool, expected: str
) -> None:
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    assert resolve_precision("auto", "cuda") == expected
    assert resolve_precision("fp32", "cuda") == "fp32"


def test_config_rejects_an_unknown_precision() -> None:
    with pytest.raises(ConfigError, match="train.precision"):
        load_config(overrides=["train.precision=half"])
    assert load_config(overrides=["search.precision=bf16"]).search.precision == "bf16"


@pytest.mark.parametrize("section", ["train", "search"])
def test_int8_is_for_translation_only_so_configs_refuse_it_in_one_line(section: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=[f"{section}.precision=int8"])
    message = str(caught.value)
    assert f"{section}.precision" in message and "'int8'" in message and "\n" not in message


def test_autocast_runs_matrix_products_in_bf16_or_fp16_only_when_asked() -> None:
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with autocast("bf16"):
        assert (a @ b).dtype == torch.bfloat16
    with autocast("fp16"):
        assert (a @ b).dtype == torch.float16
    for precision in ("fp32", "int8"):  # int8's quantized layers ignore autocast
        with autocast(precision):
            assert (a @ b).dtype == torch.float32


class FakeMallopt:
    """Stands in for glibc's ``mallopt``: records each (param, value) and returns ``result``."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.result = 1

    def __call__(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.result


@pytest.fixture
def mallopt(monkeypatch: pytest.MonkeyPatch) -> FakeMallopt:
    """A fresh, untuned process on Linux whose C library's ``mallopt`` is a fake."""
    fake = FakeMallopt()
    monkeypatch.setattr(runtime, "_tuned", False)
    monkeypatch.setattr(runtime.sys, "platform", "linux")
    monkeypatch.setattr(runtime.ctypes, "CDLL", lambda name: SimpleNamespace(mallopt=fake))
    monkeypatch.delenv("NMTKIT_MALLOC", raising=False)
    return fake


def test_tune_allocator_raises_both_malloc_thresholds_to_1_gib_once(mallopt: FakeMallopt) -> None:
    assert tune_allocator() is True
    m_mmap_threshold, m_trim_threshold = -3, -1  # glibc's malloc.h
    assert mallopt.calls == [(m_mmap_threshold, 1 << 30), (m_trim_threshold, 1 << 30)]
    assert tune_allocator() is True
    assert len(mallopt.calls) == 2  # a second call changes nothing


def test_tune_allocator_leaves_malloc_alone_when_asked(
    mallopt: FakeMallopt, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NMTKIT_MALLOC", "system")
    assert tune_allocator() is False
    assert mallopt.calls == []


def test_tune_allocator_reports_failure_when_mallopt_refuses(mallopt: FakeMallopt) -> None:
    mallopt.result = 0
    assert tune_allocator() is False


def test_tune_allocator_does_nothing_without_mallopt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "_tuned", False)
    monkeypatch.setattr(runtime.sys, "platform", "linux")
    monkeypatch.setattr(runtime.ctypes, "CDLL", lambda name: SimpleNamespace())  # e.g. musl
    monkeypatch.delenv("NMTKIT_MALLOC", raising=False)
    assert tune_allocator() is False


# ------------------------------------------------------------------------------ devices


def fake_cuda(monkeypatch: pytest.MonkeyPatch, *, built: bool, gpus: int) -> None:
    """Make this torch look like a build with or without CUDA and ``gpus`` visible GPUs."""
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: built)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: built and gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus if built else 0)


def test_limit_kernel_cache_sets_onednns_capacity_unless_the_user_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(runtime.ONEDNN_CACHE_VARIABLE, raising=False)
    assert runtime.limit_kernel_cache(64)
    assert runtime.os.environ[runtime.ONEDNN_CACHE_VARIABLE] == "64"
    monkeypatch.setenv(runtime.ONEDNN_CACHE_VARIABLE, "512")
    assert not runtime.limit_kernel_cache(64)
    assert runtime.os.environ[runtime.ONEDNN_CACHE_VARIABLE] == "512"


def test_resolve_device_keeps_the_cpu() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.parametrize(
    ("name", "built", "gpus", "message"),
    [
        ("gpu", True, 1, "--device gpu: unknown device; choose from cpu, cuda, cuda:N, mps, xpu"),
        ("cuda:x", True, 1, "--device cuda:x: unknown device; choose from cpu, cuda, cuda:N"),
        ("meta", True, 1, "--device meta: unsupported device type; choose from cpu, cuda"),
        ("cuda", False, 0, "--device cuda: this torch build has no CUDA (install a torch build"),
        ("cuda", True, 0, "--device cuda: no CUDA GPU is visible (check the driver and"),
        ("cuda:3", True, 1, "--device cuda:3: only 1 GPU here (cuda:0)"),
        ("cuda:2", True, 2, "--device cuda:2: only 2 GPUs here (cuda:0 to cuda:1)"),
    ],
)
def test_resolve_device_names_what_is_missing_in_one_line(
    monkeypatch: pytest.MonkeyPatch, name: str, built: bool, gpus: int, message: str
) -> None:
    fake_cuda(monkeypatch, built=built, gpus=gpus)
    with pytest.raises(ConfigError) as caught:
        resolve_device(name)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_resolve_device_accepts_a_gpu_that_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, built=True, gpus=2)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    assert resolve_device("cuda") == torch.device("cuda")


def test_load_model_checks_the_device_before_reading_anything(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from nmtkit.checkpoint import load_model

    fake_cuda(monkeypatch, built=False, gpus=0)
    with pytest.raises(ConfigError, match="--device cuda: this torch build has no CUDA"):
        load_model(tmp_path / "absent", device="cuda")


def test_a_line_whose_attention_would_not_fit_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime, "available_memory", lambda: 2**30)
    runtime.check_line_memory(2**29, what="pair 3", size="9 pieces", hint="use --cap")  # fits
    with pytest.raises(DataError) as caught:
        runtime.check_line_memory(2**31, what="pair 3", size="9 pieces", hint="use --cap")
    message = str(caught.value)
    for fragment in ("pair 3", "9 pieces", "2.0 GiB", "1.0 GiB", "use --cap"):
        assert fragment in message, message


def test_available_memory_is_known_on_linux() -> None:
    available = runtime.available_memory()
    assert available is not None and available > 0
