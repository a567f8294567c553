"""The screenshot of ``nmtkit serve``'s translation page in docs/serving.md and the README, taken
in the headless Chromium the browser tests use, over a real model: ``make page-figure``
(``MODEL=demo/model``, what ``make demo`` trains, by default).

    python benchmarks/page_screenshot.py --model demo/model --out docs/figures/serve-page.png
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.browser import launch  # noqa: E402 (the browser set-up of the page tests)

SENTENCES = [
    "A dog runs through the snow.",
    "Two young children are playing with a ball on the beach.",
]
URL = re.compile(r"serving .* on (http://[^\s]+) \(API docs")
WAIT_S = 120


def start_server(model: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    command = [sys.executable, "-m", "nmtkit", "serve", "-m", str(model), "--port", "0"]
    with open(log, "wb") as err:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"page_screenshot: the server stopped: {log.read_text('utf-8')[-500:]}")
        found = URL.findall(log.read_text("utf-8"))
        if found:
            return process, found[0]
        time.sleep(0.1)
    process.kill()
    sys.exit(f"page_screenshot: the server did not start in {WAIT_S} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("demo/model"))
    parser.add_argument("--out", type=Path, default=Path("docs/figures/serve-page.png"))
    args = parser.parse_args()
    if not args.model.exists():
        sys.exit(f"page_screenshot: no model at {args.model}: run `make demo` or give --model")
    with tempfile.TemporaryDirectory() as scratch:
        process, url = start_server(args.model, Path(scratch) / "serve.log")
        try:
            with sync_playwright() as playwright:
                try:
                    browser = launch(playwright)
                except FileNotFoundError as exc:
                    sys.exit(f"page_screenshot: {exc}")
                page = browser.new_page(viewport={"width": 1000, "height": 700})
                page.goto(f"{url}/")
                page.fill("#source", "\n".join(SENTENCES))
                page.fill("#nbest", "3")
                page.click("#translate")
                page.wait_for_function(
                    f"() => document.querySelectorAll('.sentence').length === {len(SENTENCES)}",
                    timeout=WAIT_S * 1000,
                )
                page.locator(".sentence").nth(1).locator("th.tgt").nth(2).hover()
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out), full_page=True)
                browser.close()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(WAIT_S)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
