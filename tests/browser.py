"""The headless Chromium that the page tests and ``make page-figure`` drive: Debian's
``chromium`` package (``make test`` installs it), or ``NMTKIT_CHROMIUM``, through playwright."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

CHROMIUM = os.environ.get("NMTKIT_CHROMIUM", "/usr/bin/chromium")
# As Debian's chromium must start here: as root, on a machine with no network and no GPU (the
# background-networking flags stop its calls out, which a closed network refuses by the dozen).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """The Chromium to drive: ``NMTKIT_CHROMIUM`` or /usr/bin/chromium, else ``chromium`` on the
    PATH; None when there is none."""
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def launch(playwright: Playwright) -> Browser:
    """Start that Chromium headless.

    Raises:
        FileNotFoundError: there is no Chromium.
    """
    executable = find_chromium()
    if executable is None:
        raise FileNotFoundError(
            f"no Chromium at {CHROMIUM}: `make browser` (part of `make test`) installs Debian's "
            "chromium package"
        )
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
