"""User-facing errors: one named kind per cause, each printed by the CLI as one line, and the one
"unknown name, did you mean" message."""

from __future__ import annotations

import difflib
import signal
from collections.abc import Iterable


class NmtkitError(Exception):
    """Something a user caused and can fix: a bad path, a malformed line, a wrong option.

    Args:
        message: what is wrong, in one sentence.
        where: ``path:line`` or a config key path, printed before the message.
        hint: what to do about it, printed after the message in parentheses.
    """

    exit_code = 1

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        return f"{text} ({self.hint})" if self.hint else text


class ConfigError(NmtkitError):
    """An unknown or ill-typed option, preset or config key: bad usage, exit code 2."""

    exit_code = 2


class DataError(NmtkitError):
    """A corpus or input file that cannot be read as the command needs it."""


class PluginError(NmtkitError):
    """An unknown component name or a plugin that fails to load."""


class CheckpointError(NmtkitError):
    """A file that is not an nmtkit checkpoint, or one this version cannot rebuild."""


class DistributedError(NmtkitError):
    """Under torchrun: the ranks could not meet, or another rank died or stopped answering."""


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGINT, SIGTERM) ended a command; the CLI exits with 128 + its number, as
    a shell reports a process killed by that signal (130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def unknown_name(
    what: str,
    name: object,
    choices: Iterable[str],
    *,
    error: type[NmtkitError] = ConfigError,
    where: str | None = None,
) -> NmtkitError:
    """Return the error for an unknown ``name`` of ``what``: it lists the valid choices, and its
    hint names the closest one (``difflib.get_close_matches``).

    Example: ``unknown metric 'blue'; choose from bleu, chrf, ter (did you mean 'bleu'?)``.
    """
    choices = list(choices)
    close = difflib.get_close_matches(str(name), choices, n=1)
    return error(
        f"unknown {what} {name!r}; choose from {', '.join(choices)}",
        where=where,
        hint=f"did you mean {close[0]!r}?" if close else None,
    )


def check_probability(value: float, where: str) -> None:
    """Refuse a dropout probability outside [0, 1) for the config key ``where``.

    Raises:
        ConfigError: naming the key and the value.
    """
    if not 0 <= value < 1:
        raise ConfigError(f"{where} must be in [0, 1), got {value}", where=where)
