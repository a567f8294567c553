"""User-facing errors: one named kind per cause, each printed by the CLI as one line."""

from __future__ import annotations


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
