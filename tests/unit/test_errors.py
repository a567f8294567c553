"""The one "unknown name, did you mean" error."""

from __future__ import annotations

from nmtkit.errors import ConfigError, PluginError, unknown_name


def test_an_unknown_name_lists_the_choices_and_hints_the_closest() -> None:
    error = unknown_name("metric", "blue", ["bleu", "chrf", "ter"])
    assert isinstance(error, ConfigError)
    assert error.message == "unknown metric 'blue'; choose from bleu, chrf, ter"
    assert error.hint == "did you mean 'bleu'?"
    assert str(error) == "unknown metric 'blue'; choose from bleu, chrf, ter (did you mean 'bleu'?)"


def test_a_name_close_to_none_gets_no_hint() -> None:
    error = unknown_name("optimizer", "sgd", ("adam", "adadelta"), where="train.optimizer")
    assert error.hint is None
    assert str(error) == "train.optimizer: unknown optimizer 'sgd'; choose from adam, adadelta"


def test_the_error_kind_can_be_chosen() -> None:
    error = unknown_name("attention", "adtive", ["additive", "dot"], error=PluginError)
    assert type(error) is PluginError and error.hint == "did you mean 'additive'?"
