"""A real ``nmtkit serve`` in a subprocess on a free port, for the server tests; every wait
has a timeout, so that a broken server fails a test instead of hanging it."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.processes import send, spawn

TIMEOUT = 60.0  # seconds: start-up (torch, the model) or one answer on a busy machine
URL = re.compile(r"serving .* on (http://[^\s]+) \(API docs")


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path
    stdout_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text("utf-8")

    def post(self, body: Any, **kwargs: Any) -> httpx.Response:
        return httpx.post(f"{self.url}/translate", json=body, timeout=TIMEOUT, **kwargs)

    def health(self) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/health", timeout=TIMEOUT)
        assert response.status_code == 200, response.text
        return response.json()


def wait_until(condition: Callable[[], bool], *, timeout: float = TIMEOUT, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(0.05)


@contextlib.contextmanager
def running_server(model_dir: Path, folder: Path, *flags: str) -> Iterator[Server]:
    """``nmtkit serve -m MODEL_DIR --port 0 FLAGS`` on one torch thread, its output in
    ``folder``; stopped (SIGTERM, then SIGKILL) on the way out if a test has not stopped it."""
    folder.mkdir(parents=True, exist_ok=True)
    stderr_path, stdout_path = folder / "server.err", folder / "server.out"
    command = [sys.executable, "-m", "nmtkit", "serve", "-m", str(model_dir), "--port", "0"]
    with open(stderr_path, "wb") as err, open(stdout_path, "wb") as out:
        process = spawn([*command, "--threads", "1", *flags], stdout=out, stderr=err)
    try:
        found: list[str] = []

        def started() -> bool:
            assert process.poll() is None, stderr_path.read_text("utf-8")
            found.extend(URL.findall(stderr_path.read_text("utf-8")))
            return bool(found)

        wait_until(started, what="the server's start line")
        server = Server(process, found[0], stderr_path, stdout_path)
        wait_until(lambda: _answers(server), what="/health")
        yield server
    finally:
        if process.poll() is None:
            send(process, signal.SIGTERM)
            try:
                process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(TIMEOUT)


def _answers(server: Server) -> bool:
    try:
        return httpx.get(f"{server.url}/health", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def refuses_connections(url: str) -> bool:
    try:
        httpx.get(f"{url}/health", timeout=5)
    except httpx.ConnectError:
        return True
    except httpx.TransportError:
        return False
    return False
