"""The registry checks components when they register and explains unknown names."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from nmtkit import registry
from nmtkit.errors import PluginError
from nmtkit.registry import AttentionScorer, register


def test_builtins_are_registered_by_kind() -> None:
    assert {"birnn", "rnn"} <= set(registry.names("encoder"))
    assert {"additive", "none"} <= set(registry.names("attention"))
    assert {"greedy", "beam"} <= set(registry.names("search"))
    assert "gru" in registry.names("decoder")


def test_unknown_name_lists_registered_ones_and_the_closest() -> None:
    with pytest.raises(PluginError) as info:
        registry.get("attention", "additiv")
    assert "additive" in str(info.value) and "did you mean 'additive'" in str(info.value)


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(PluginError, match="registered twice"):

        @register("attention", "additive")
        class Another(AttentionScorer):
            pass


def test_a_class_must_subclass_its_kinds_contract() -> None:
    with pytest.raises(PluginError, match="must subclass AttentionScorer"):

        @register("attention", "not-a-scorer")
        class NotAScorer:
            @dataclass(frozen=True)
            class Config:
                pass


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(PluginError, match="unknown component kind"):
        register("optimizer", "sgd")(AttentionScorer)
