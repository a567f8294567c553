"""Fetch Multi30k task 1 (raw, gzipped) into a local cache with checksums, using pooch.

Cite: Elliott, Frank, Sima'an, Specia (2016), "Multi30K: Multilingual English-German Image
Descriptions"; French data: Elliott et al. (2017).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import pooch
import requests

from nmtkit.errors import DataError

log = logging.getLogger(__name__)

MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
MULTI30K_SPLITS = ("train", "val", "test_2016_flickr")
# SHA-256 of the upstream files.
MULTI30K_SHA256 = {
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
}
_TIMEOUT_S = 60


def default_cache_dir() -> Path:
    """Return ``$NMTKIT_CACHE/multi30k``, or the OS user cache's ``nmtkit/multi30k``."""
    root = os.environ.get("NMTKIT_CACHE")
    return (Path(root) if root else Path(pooch.os_cache("nmtkit"))) / "multi30k"


def download_multi30k(
    cache_dir: Path | None = None,
    *,
    base_url: str = MULTI30K_URL,
    langs: Sequence[str] = ("en", "de", "fr"),
) -> Path:
    """Download the train, val and test_2016_flickr ``.gz`` files of ``langs``; return their folder.

    Files already in the cache with the right checksum are not downloaded again.

    Args:
        cache_dir: where to keep the files; default ``default_cache_dir()``.
        base_url: the folder URL that holds ``{split}.{lang}.gz``.

    Raises:
        DataError: an unknown language, a failed download, or a file with the wrong checksum.
    """
    unknown = sorted(set(langs) - {name.split(".")[1] for name in MULTI30K_SHA256})
    if unknown:
        raise DataError(f"Multi30k has no language {', '.join(unknown)}", hint="use en, de or fr")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if not base_url.endswith("/"):
        base_url += "/"
    names = [f"{split}.{lang}.gz" for split in MULTI30K_SPLITS for lang in langs]
    fetcher = pooch.create(
        path=folder, base_url=base_url, registry={n: f"sha256:{MULTI30K_SHA256[n]}" for n in names}
    )
    downloader = pooch.HTTPDownloader(progressbar=False, timeout=_TIMEOUT_S)
    for name in names:
        url = base_url + name
        try:
            fetcher.fetch(name, downloader=downloader)
        except requests.RequestException as exc:
            raise DataError(f"download failed: {exc}", where=url) from None
        except ValueError as exc:  # pooch's checksum mismatch
            raise DataError(
                f"checksum mismatch for {name}: {exc}",
                where=url,
                hint="the server holds a different file; remove it from the cache and retry",
            ) from None
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise DataError(f"cannot store {name}: {reason}", where=str(folder)) from None
    log.info("Multi30k (%s) is in %s", ", ".join(langs), folder)
    return folder
