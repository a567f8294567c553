"""Tests for nmtkit.download against a local HTTP server (no internet needed)."""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nmtkit.download import (
    MULTI30K_SHA256,
    default_cache_dir,
    download_multi30k,
)
from nmtkit.errors import DataError


class _QuietHandler(SimpleHTTPRequestHandler):
    requested: list[str] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (base signature)
        pass

    def do_GET(self) -> None:  # noqa: N802 (base method name)
        self.requested.append(self.path)
        super().do_GET()


@pytest.fixture
def serve() -> Iterator[Callable[[Path], str]]:
    """Serve a folder over HTTP on 127.0.0.1; call ``serve(folder)`` to get its base URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    _QuietHandler.requested = []
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_download_fetches_and_checks_every_split(
    shared_data: Path, serve: Callable[[Path], str], tmp_path: Path
) -> None:
    url = serve(shared_data / "multi30k")
    folder = download_multi30k(tmp_path / "cache", base_url=url, langs=("en", "de"))
    assert folder == tmp_path / "cache"
    names = sorted(p.name for p in folder.iterdir())
    splits = ("train", "val", "test_2016_flickr")
    assert names == sorted(f"{split}.{lang}.gz" for split in splits for lang in ("en", "de"))
    for name in names:
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == MULTI30K_SHA256[name]


def test_download_reuses_cached_files(
    shared_data: Path, serve: Callable[[Path], str], tmp_path: Path
) -> None:
    url = serve(shared_data / "multi30k")
    download_multi30k(tmp_path, base_url=url, langs=("fr",))
    assert len(_QuietHandler.requested) == 3
    download_multi30k(tmp_path, base_url=url.rstrip("/"), langs=("fr",))
    assert len(_QuietHandler.requested) == 3


def test_corrupted_file_raises_data_error_naming_url(
    serve: Callable[[Path], str], tmp_path: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "train.en.gz").write_bytes(b"not the real corpus")
    url = serve(served)
    with pytest.raises(DataError, match="checksum mismatch for train.en.gz") as error:
        download_multi30k(tmp_path / "cache", base_url=url, langs=("en",))
    assert error.value.where == f"{url}train.en.gz"
    assert not (tmp_path / "cache" / "train.en.gz").exists()


def test_missing_file_raises_data_error_naming_url(
    serve: Callable[[Path], str], tmp_path: Path
) -> None:
    url = serve(tmp_path)
    with pytest.raises(DataError, match="download failed") as error:
        download_multi30k(tmp_path / "cache", base_url=url, langs=("de",))
    assert error.value.where == f"{url}train.de.gz"


def test_unknown_language_is_rejected_before_downloading(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no language cs"):
        download_multi30k(tmp_path, base_url="http://127.0.0.1:9/", langs=("en", "cs"))


def test_cache_dir_follows_nmtkit_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NMTKIT_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "multi30k"
