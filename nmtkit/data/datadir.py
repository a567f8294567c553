"""The data dir that ``preprocess`` writes: its layout, ``manifest.json``, and atomic staging.

A data dir holds::

    manifest.json                  this record, written last
    spm.model                      joint SentencePiece model (or spm.{lang}.model per language)
    {split}.{lang}.bin / .idx      binarized token ids (see nmtkit.data.dataset), split in
                                   train, valid, test
    {split}.raw.{lang}             valid and test lines as read, for BLEU references
    train.sampled{k}.{lang}.bin    with --sampled-segmentations K, k = 1..K: the training pairs
                 / .idx            again, each segmentation sampled (subword regularization);
                                   training reads one an epoch
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nmtkit.data.text import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_PIECES,
    UNK_ID,
    TextPipeline,
    TextSettings,
)
from nmtkit.errors import DataError
from nmtkit.files import count_lines
from nmtkit.outputs import (
    atomic_write,
    check_writable_dir,
    remove_stale_staging,
    staging_path,
    writing,
)

MANIFEST_NAME = "manifest.json"
FORMAT_NAME = "nmtkit-data"
FORMAT_VERSION = 1
DATASET_FORMAT = (
    "{prefix}.bin: .npy of token ids, uint16 if every id < 65535 else int32; "
    "{prefix}.idx: .npy of int64 offsets, length n+1; no BOS/EOS stored"
)
# The most pieces a sentence may have in a data dir whose manifest records no limit (written
# before ``preprocess`` bounded pieces): far over any real sentence, far under what exhausts memory.
UNRECORDED_MAX_PIECES = 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class CorpusFile:
    """An input corpus as the manifest records it."""

    path: str
    sha256: str
    num_lines: int

    @classmethod
    def of(cls, path: Path, *, num_lines: int | None = None) -> CorpusFile:
        """Describe ``path``, counting its lines unless ``num_lines`` is given."""
        return cls(
            path=str(path.resolve()),
            sha256=sha256_file(path),
            num_lines=count_lines(path) if num_lines is None else num_lines,
        )


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file's bytes (compressed bytes for a .gz)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def spm_model_name(lang: str, *, joint: bool) -> str:
    """Return the file name of the SentencePiece model that serves ``lang``."""
    return "spm.model" if joint else f"spm.{lang}.model"


def sampled_name(number: int) -> str:
    """Return the name of the training pairs' ``number``-th sampled segmentation (from 1)."""
    return f"train.sampled{number}"


def sampled_names(manifest: Mapping[str, Any]) -> list[str]:
    """The names of the training pairs' sampled segmentations that a data dir holds, in order
    (none for one written without ``--sampled-segmentations`` or before it existed)."""
    return [entry["name"] for entry in manifest["splits"]["train"].get("sampled", [])]


def nmtkit_version() -> str:
    """Return nmtkit's version, or 0.1.0 while the package does not define one."""
    import nmtkit  # at call time: nmtkit/__init__.py may re-export this package

    return str(getattr(nmtkit, "__version__", "0.1.0"))


def build_manifest(
    *,
    config: Mapping[str, Any],
    corpora: Mapping[str, tuple[CorpusFile, CorpusFile]],
    splits: Mapping[str, Mapping[str, Any]],
    clean_counts: Mapping[str, int],
    vocab_sizes: Mapping[str, int],
    spm_models: Mapping[str, str],
    dtypes: Mapping[str, str],
    sampled: Sequence[str] = (),
) -> dict[str, Any]:
    """Assemble the manifest record (plain JSON types only).

    Args:
        config: ``asdict`` of the PreprocessConfig.
        corpora: the (src, tgt) input files of each split.
        splits: ``asdict`` of each SplitSummary, by split name.
        dtypes: the token dtype of each dataset, by prefix (``"train.de"``).
        sampled: the names of the training pairs' sampled segmentations (``train.sampled1``).
    """
    src_lang, tgt_lang = config["src_lang"], config["tgt_lang"]

    def datasets(name: str) -> dict[str, dict[str, str]]:
        return {
            lang: {"prefix": f"{name}.{lang}", "dtype": dtypes[f"{name}.{lang}"]}
            for lang in (src_lang, tgt_lang)
        }

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "nmtkit_version": nmtkit_version(),
        "config": dict(config),
        "src_lang": src_lang,
        "tgt_lang": tgt_lang,
        "special_ids": {"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID},
        "special_pieces": list(SPECIAL_PIECES),
        "spm_models": dict(spm_models),
        "vocab_sizes": dict(vocab_sizes),
        "clean_counts": dict(clean_counts),
        "dataset_format": DATASET_FORMAT,
        "inputs": {
            split: {src_lang: asdict(src), tgt_lang: asdict(tgt)}
            for split, (src, tgt) in corpora.items()
        },
        "splits": {
            name: {
                **summary,
                "datasets": datasets(name),
                "raw": (
                    {lang: f"{name}.raw.{lang}" for lang in (src_lang, tgt_lang)}
                    if name != "train"
                    else {}
                ),
                **(
                    {"sampled": [{"name": n, "datasets": datasets(n)} for n in sampled]}
                    if name == "train" and sampled
                    else {}
                ),
            }
            for name, summary in splits.items()
        },
    }


def write_manifest(data_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Write ``manifest.json`` into ``data_dir`` atomically."""
    with atomic_write(data_dir / MANIFEST_NAME) as stream:
        json.dump(manifest, stream, indent=2, ensure_ascii=False)
        stream.write("\n")


def load_manifest(data_dir: str | Path) -> dict[str, Any]:
    """Read the manifest of a data dir written by ``preprocess``.

    Raises:
        DataError: no manifest (not a data dir), or one this version cannot read.
    """
    path = Path(data_dir) / MANIFEST_NAME
    if not Path(data_dir).exists():
        raise DataError("no such data directory", where=str(data_dir))
    if not Path(data_dir).is_dir():
        raise DataError("is a file, not a data directory", where=str(data_dir))
    if not path.is_file():
        raise DataError(
            "not an nmtkit data directory, run nmtkit preprocess",
            where=str(data_dir),
            hint=f"no {MANIFEST_NAME} in it",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"unreadable manifest: {exc}", where=str(path)) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise DataError("not an nmtkit data manifest", where=str(path))
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"data format version {manifest.get('format_version')}, expected {FORMAT_VERSION}",
            where=str(path),
            hint="rerun nmtkit preprocess with this version",
        )
    return manifest


def max_pieces(manifest: Mapping[str, Any]) -> int | None:
    """The most pieces (EOS not counted) a sentence of the data dir may have, as ``preprocess``
    recorded it (``config.clean.max_pieces``); None for a data dir written before it did."""
    value = manifest.get("config", {}).get("clean", {}).get("max_pieces")
    return None if value is None else int(value)


def load_pipeline(data_dir: str | Path, lang: str) -> TextPipeline:
    """Build the ``TextPipeline`` that ``preprocess`` used for ``lang`` in ``data_dir``.

    Raises:
        DataError: not a data dir, or ``lang`` is not one of its languages.
    """
    manifest = load_manifest(data_dir)
    models = manifest["spm_models"]
    if lang not in models:
        raise DataError(f"no language '{lang}' here (has {', '.join(models)})", where=str(data_dir))
    settings = TextSettings.from_dict(manifest["config"]["text"], where="config.text")
    return TextPipeline(settings, lang, (Path(data_dir) / models[lang]).read_bytes())


def check_destdir(destdir: Path, inputs: Sequence[str | Path]) -> None:
    """Check that ``destdir`` may be (re)placed: absent, empty or a data dir, holding no input.

    Raises:
        DataError: ``destdir`` is a file, a folder of something else, or holds an input corpus,
            or its folder cannot be written (made, if absent).
    """
    if destdir.exists() and not destdir.is_dir():
        raise DataError("exists and is not a folder", where=str(destdir))
    if destdir.is_dir() and any(destdir.iterdir()) and not (destdir / MANIFEST_NAME).is_file():
        raise DataError(
            "exists and is not an nmtkit data directory, so it will not be replaced",
            where=str(destdir),
            hint="choose another destdir or remove it",
        )
    root = destdir.resolve()
    for path in inputs:
        if root in Path(path).resolve().parents:
            raise DataError("input corpus lies inside destdir", where=str(path))
    check_writable_dir(destdir.parent)  # staged beside destdir: a file in the way, read-only


@contextlib.contextmanager
def staged_dir(destdir: Path) -> Iterator[Path]:
    """Yield a fresh ``destdir.tmp-<host>-<pid>-<random>`` beside ``destdir``; move it into place
    on success.

    An existing ``destdir`` is replaced only on success. On any exception, Ctrl-C included, the
    staging folder is deleted and ``destdir`` is left as it was. Staging folders of ``destdir``
    left by a killed process are deleted first.

    Raises:
        DataError: an operating-system error while building it (a full disk), naming ``destdir``.
    """
    destdir = destdir.resolve()
    destdir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(destdir)
    while True:
        tmp = staging_path(destdir)
        with contextlib.suppress(FileExistsError):
            tmp.mkdir()
            break
    try:
        with writing(destdir):  # e.g. a full disk while building it: one error naming destdir
            yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if destdir.exists():
        old = tmp.with_name(tmp.name.replace(".tmp-", ".old-"))
        os.rename(destdir, old)
        os.rename(tmp, destdir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, destdir)
