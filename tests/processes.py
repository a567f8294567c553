"""The process state the suite sets for itself and its child processes, so that it passes
however it is started: in a terminal or not, as a background job, with or without stdin, from
any folder and shell environment.

A shell starts a background job with SIGINT ignored (``nohup make test &`` in a script, cron,
many CI runners), and an ignored signal stays ignored across fork and exec; subprocess's
``restore_signals`` puts back only SIGPIPE, SIGXFZ and SIGXFSZ. So every child started here
(:func:`spawn`, :func:`run`) begins with the stop signals at their defaults and unblocked (which
:func:`spawn` checks in ``/proc``), reads stdin from /dev/null unless the test gives it input,
and inherits the environment :func:`normalise` cleaned.
"""

from __future__ import annotations

import contextlib
import functools
import locale
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# The signals the tests send to stop a child; nmtkit answers them (130, 143, a clean stop).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

UMASK = 0o022  # files 644, folders 755, whatever the caller's umask

# Variables that change what nmtkit, torch, rich, typer, sacrebleu or a child Python do; the
# suite removes them, so that the caller's shell cannot change a result. NMTKIT_SHARED_DATA stays:
# it is an input of the suite (tests/conftest.py), as are CI and HYPOTHESIS_PROFILE.
UNSET = (
    # nmtkit's own (NMTKIT_DEBUG adds tracebacks, NMTKIT_DISABLE_PLUGINS hides the test plugin)
    *("NMTKIT_DEBUG", "NMTKIT_DISABLE_PLUGINS", "NMTKIT_MALLOC", "NMTKIT_CACHE"),
    "NMTKIT_DIST_TIMEOUT",
    # a launcher's (torchrun, SLURM jobs that export them): train would join a process group
    *("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE"),
    *("ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT"),
    # the terminal: colours, a forced terminal and a width wrap rich's and typer's lines
    *("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "PY_COLORS", "COLORTERM", "TTY_COMPATIBLE"),
    *("TTY_INTERACTIVE", "TERMINAL_WIDTH", "JUPYTER_COLUMNS", "JUPYTER_LINES"),
    *("_TYPER_STANDARD_TRACEBACK", "TYPER_USE_RICH"),
    # a child Python (PYTHONINSPECT would wait on stdin at exit, PYTHONWARNINGS=error would fail)
    *("PYTHONINSPECT", "PYTHONOPTIMIZE", "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONSTARTUP"),
    *("PYTHONIOENCODING", "PYTHONUTF8", "PYTHONBREAKPOINT", "PYTHONDEVMODE"),
    "SACREBLEU_SEED",  # the paired tests' resampling seed
)
UNSET_PREFIXES = ("TORCHELASTIC_",)

# Variables the suite sets: one thread a child, as the test processes (tests/conftest.py), so
# that two xdist workers and their children share 2 cores evenly and a box's 64-thread default
# cannot change a run; UTF-8 text streams whatever the caller's locale (the tests read the
# children's output as UTF-8); and typer's switch against a forced terminal, which it otherwise
# turns on under GITHUB_ACTIONS (left set: CI tools of pytest's own may read it).
FIXED = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "LC_ALL": "C.UTF-8",
    "_TYPER_FORCE_DISABLE_TERMINAL": "1",
}

# Removed by normalise(): a colour wish of the caller's, passed on to pytest's own output.
removed: dict[str, str] = {}


def normalise() -> None:
    """Give this process (and so every child it starts) the suite's umask, environment and
    text encoding.

    Called first thing by tests/conftest.py, before rich's console and typer are imported, since
    both read the environment once.
    """
    os.umask(UMASK)
    for name in [*UNSET, *(n for n in os.environ if n.startswith(UNSET_PREFIXES))]:
        if name in os.environ:
            removed[name] = os.environ.pop(name)
    os.environ.update(FIXED)
    # The tests' own open() and read_text() without an encoding: UTF-8 here too.
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, FIXED["LC_ALL"])


def child_env(**changes: str | None) -> dict[str, str]:
    """This process's (normalised) environment with ``changes``; None removes a variable."""
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _default_signals(ignore: Sequence[int] = ()) -> None:
    """In the child, before exec: the stop signals at their defaults (but ``ignore``, ignored)
    and nothing blocked."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN if signum in ignore else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def undeliverable(pid: int, signals: Sequence[int] = STOP_SIGNALS) -> list[str]:
    """Which of ``signals`` process ``pid`` ignores or blocks (``SigIgn``, ``SigBlk`` of
    ``/proc/PID/status``); empty where there is no /proc (not Linux)."""
    status = Path(f"/proc/{pid}/status")
    if not Path("/proc/self/status").is_file():
        return []
    fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
    ignored, blocked = (int(fields[key].strip(), 16) for key in ("SigIgn", "SigBlk"))
    names = []
    for signum in signals:
        bit = 1 << (signum - 1)
        for mask, how in ((ignored, "ignored"), (blocked, "blocked")):
            if mask & bit:
                names.append(f"{signal.Signals(signum).name} {how}")
    return names


def spawn(
    args: Sequence[str],
    *,
    stdin: Any = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
    text: bool = False,
    ignore: Sequence[int] = (),
    **options: Any,
) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args)`` started as from an interactive shell: the stop signals at
    their defaults (checked once the child runs), stdin /dev/null unless given, text as UTF-8.

    Args:
        ignore: stop signals to start the child with ignored instead, as a background job's.
    """
    if text:
        options.setdefault("encoding", "utf-8")
    start_signals = functools.partial(_default_signals, tuple(ignore))
    process = subprocess.Popen(args, stdin=stdin, env=env, preexec_fn=start_signals, **options)
    # Popen returns once the child has exec'd: what it ignores or blocks now, it inherited.
    inherited = undeliverable(process.pid)
    expected = [
        f"{signal.Signals(signum).name} ignored" for signum in STOP_SIGNALS if signum in ignore
    ]
    assert inherited == expected, f"{args[0]} started with {inherited}, not {expected}"
    return process


def send(process: subprocess.Popen[Any], signum: int) -> None:
    """Send ``signum`` to ``process``, first checking that the child can receive it."""
    found = undeliverable(process.pid, [signum])
    assert not found, f"the child has {found}: the signal would not stop it"
    process.send_signal(signum)


def run(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    text: bool = False,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(args)`` started as :func:`spawn` starts a child; stdin is ``input``
    (if given), else /dev/null."""
    if input is None:
        options.setdefault("stdin", subprocess.DEVNULL)
    if text:
        options.setdefault("encoding", "utf-8")
    return subprocess.run(args, input=input, env=env, preexec_fn=_default_signals, **options)
