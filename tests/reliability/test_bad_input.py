"""Bad input to every subcommand: one error line, the right exit status, nothing half-written.

Each case of the table runs one command in-process and checks that it exits with the status of
the case (1 bad input, 2 bad usage), prints no traceback and exactly one ``nmtkit: error:`` line
(or Click's usage error) holding a fragment of the expected message, and leaves every file it
could see as it was: no temporary file, staging folder or partial output left behind, and no
pre-existing output, model or data file rewritten or touched.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from tests.cli.runs import invoke
from tests.processes import spawn
from tests.reliability.checks import (
    NMTKIT,
    Mounts,
    assert_one_error_line,
    assert_unchanged,
    flip_bytes,
    snapshot,
)

QUIET_COMMANDS = {"preprocess", "train", "translate", "score", "align"}
HAS_CUDA = torch.cuda.is_available()  # then --device cuda is no error


@dataclass(frozen=True)
class Case:
    """One bad command: what must happen, and its argv (a template, see :func:`expand`).

    ``status`` 0 marks a command that must decline politely and succeed, changing nothing.
    """

    id: str
    status: int
    fragment: str
    argv: str
    stdin: bytes = b"a b c\n"
    quiet: bool = True


# Command prefixes of the table, themselves templates.
PREFIXES = {
    "pre": "preprocess -s src -t tgt --vocab-size 40 --no-normalize --destdir {ws}/out --trainpref",
    "pre_to": "preprocess -s src -t tgt --vocab-size 40 --trainpref {ws}/train --destdir",
    "train": "train {data} --preset tiny --max-updates 2 --threads 1 -o",
    "tr": "translate -m {model}",
    "score": "score -r {ws}/tgt.txt -i {ws}/src.txt",
    "align": "align -m {model} --source {ws}/src.txt --target {ws}/tgt.txt",
    "align_with": "align --source {ws}/src.txt --target {ws}/tgt.txt -m",
}

CASES = [
    # preprocess
    Case("preprocess-missing-corpus", 1, "nowhere.src", "{pre} {ws}/nowhere"),
    Case("preprocess-folder-as-corpus", 1, "is a folder", "{pre} {ws}/folder"),
    Case("preprocess-invalid-utf8", 1, "badutf.src:5", "{pre} {ws}/badutf"),
    Case("preprocess-line-counts-differ", 1, "mismatch.tgt", "{pre} {ws}/mismatch"),
    Case("preprocess-empty-corpus", 1, "empty.src", "{pre} {ws}/empty"),
    Case("preprocess-destdir-under-a-file", 1, "afile", "{pre_to} {ws}/afile/data"),
    Case("preprocess-destdir-is-a-file", 1, "not a folder", "{pre_to} {ws}/afile"),
    Case("preprocess-destdir-read-only", 1, "Read-only file system", "{pre_to} {ro}/data"),
    Case("preprocess-destdir-of-other-files", 1, "not an nmtkit data dir", "{pre_to} {ws}/adir"),
    # train
    Case(
        "train-missing-data-dir", 1, "nowhere: no such data dir", "train {ws}/nowhere -o {ws}/new"
    ),
    Case("train-data-dir-is-a-file", 1, "afile: is a file", "train {ws}/afile -o {ws}/new"),
    Case("train-not-a-data-dir", 1, "not an nmtkit data dir", "train {ws}/adir -o {ws}/new"),
    Case("train-data-over-the-length-limit", 1, "pieces", "train {ws}/longdata -o {ws}/new"),
    Case("train-unknown-set-key", 2, "train.lrr", "{train} {ws}/new --set train.lrr=0.1"),
    Case("train-bad-set-value", 2, "train.lr", "{train} {ws}/new --set train.lr=fast"),
    Case("train-set-without-a-value", 2, "train.lr", "{train} {ws}/new --set train.lr"),
    Case("train-unknown-preset", 2, "tinny", "train {data} -o {ws}/new --preset tinny"),
    Case(
        "train-unknown-component", 2, "locatoin", "{train} {ws}/new --set model.attention=locatoin"
    ),
    Case("train-malformed-yaml", 2, "bad.yaml:3:1", "train {data} -o {ws}/new -c {ws}/bad.yaml"),
    Case("train-config-not-utf8", 2, "not UTF-8", "train {data} -o {ws}/new -c {ws}/bad_utf8.txt"),
    Case("train-config-is-a-folder", 2, "is a folder", "train {data} -o {ws}/new -c {ws}/adir"),
    Case("train-into-a-model-without-overwrite", 1, "already holds", "{train} {ws}/model"),
    Case(
        "train-resume-a-finished-run",
        0,
        "nothing to do",
        "train {data} -o {ws}/model --preset tiny --resume --max-updates 10",
        quiet=False,
    ),
    Case(
        "train-resume-damaged-train-states",
        1,
        "train_state",
        "train {data} -o {ws}/damaged_state --preset tiny --resume --max-updates 20",
    ),
    Case("train-save-dir-under-a-file", 1, "afile", "{train} {ws}/afile/model"),
    Case("train-save-dir-read-only", 1, "Read-only file system", "{train} {ro}/model"),
    # translate
    Case("translate-missing-input", 1, "nowhere", "{tr} -i {ws}/nowhere"),
    Case("translate-folder-as-input", 1, "adir", "{tr} -i {ws}/adir"),
    Case(
        "translate-invalid-utf8-file",
        1,
        "bad_utf8.txt:2",
        "{tr} -i {ws}/bad_utf8.txt --output {ws}/existing.out",
    ),
    Case(
        "translate-invalid-utf8-stdin",
        1,
        "<stdin>:2",
        "{tr} --output {ws}/existing.out",
        stdin=b"a b\n\xff c\n",
    ),
    Case("translate-missing-model", 1, "nowhere", "translate -m {ws}/nowhere"),
    Case("translate-not-a-model", 1, "notmodel", "translate -m {ws}/notmodel"),
    Case("translate-damaged-checkpoint", 1, "best.pt", "translate -m {ws}/damaged"),
    Case("translate-output-under-a-file", 1, "afile/out", "{tr} --output {ws}/afile/out"),
    Case("translate-output-is-a-folder", 1, "it is a folder", "{tr} --output {ws}/adir"),
    Case("translate-output-read-only", 1, "Read-only file system", "{tr} --output {ro}/out"),
    Case("translate-chunk-size-0", 2, "--chunk-size", "{tr} --chunk-size 0"),
    Case("translate-negative-max-len-a", 2, "--max-len-a", "{tr} --max-len-a -1"),
    Case("translate-negative-max-len-b", 2, "--max-len-b", "{tr} --max-len-b -1"),
    Case("translate-device-cuda", 2, "--device cuda", "{tr} --device cuda"),
    Case("translate-beam-not-a-number", 2, "--beam", "{tr} --beam many"),
    Case("translate-unknown-output-format", 2, "xml", "{tr} --output-format xml"),
    # score
    Case("score-missing-reference", 1, "nowhere", "score -r {ws}/nowhere -i {ws}/src.txt"),
    Case("score-missing-hypotheses", 1, "nowhere", "score -r {ws}/tgt.txt -i {ws}/nowhere"),
    Case("score-folder-as-hypotheses", 1, "adir", "score -r {ws}/tgt.txt -i {ws}/adir"),
    Case("score-line-counts-differ", 1, "short.txt has 2", "score -r {ws}/tgt.txt {ws}/short.txt"),
    Case("score-invalid-utf8", 1, "bad_utf8.txt:2", "score -r {ws}/tgt.txt {ws}/bad_utf8.txt"),
    Case("score-unknown-metric", 2, "meteor", "{score} -M meteor"),
    Case("score-plot-under-a-file", 1, "afile/p.png", "{score} --plot {ws}/afile/p.png"),
    Case("score-plot-is-a-folder", 1, "plots.png", "{score} --plot {ws}/plots.png"),
    Case("score-plot-read-only", 1, "Read-only file system", "{score} --plot {ro}/p.png"),
    Case(
        "score-existing-plot-kept",
        1,
        "short.txt",
        "score -r {ws}/tgt.txt {ws}/short.txt --plot {ws}/existing.png",
    ),
    # align
    Case("align-missing-source", 1, "nowhere", "{align} --source {ws}/nowhere"),
    Case("align-folder-as-source", 1, "adir", "{align} --source {ws}/adir"),
    Case("align-line-counts-differ", 1, "short.txt", "{align} --target {ws}/short.txt"),
    Case(
        "align-invalid-utf8",
        1,
        "bad_utf8.txt:2",
        "{align} --source {ws}/bad_utf8.txt --output {ws}/existing.out",
    ),
    Case("align-model-without-attention", 2, "not an alignment", "{align_with} {encdec}"),
    Case("align-not-a-model", 1, "notmodel", "{align_with} {ws}/notmodel"),
    Case("align-damaged-checkpoint", 1, "best.pt", "{align_with} {ws}/damaged"),
    Case("align-output-under-a-file", 1, "afile/out", "{align} --output {ws}/afile/out"),
    Case("align-output-is-a-folder", 1, "it is a folder", "{align} --output {ws}/adir"),
    Case("align-output-read-only", 1, "Read-only file system", "{align} --output {ro}/out"),
    Case("align-plot-under-a-file", 1, "afile", "{align} --plot {ws}/afile/plots"),
    Case("align-plot-read-only", 1, "Read-only file system", "{align} --plot {ro}/plots"),
    Case("align-device-cuda", 2, "--device cuda", "{align} --device cuda"),
    Case("align-batch-size-0", 2, "--batch-size", "{align} --batch-size 0"),
    # list, download, usage
    Case("list-unknown-kind", 2, "attentoin", "list attentoin"),
    Case("download-cache-under-a-file", 1, "afile", "download --cache-dir {ws}/afile/cache"),
    Case("download-cache-read-only", 1, "Read-only file system", "download --cache-dir {ro}/c"),
    Case("unknown-command", 2, "translat", "translat -m {model}"),
]


@pytest.fixture
def workspace(tmp_path: Path, toy_data: Path, toy_model: Path) -> Path:
    """Inputs good and bad, files in the way, and outputs that must survive a failure."""
    ws = tmp_path / "ws"
    ws.mkdir()
    write = lambda name, text: (ws / name).write_bytes(text)  # noqa: E731
    write("src.txt", b"a b c\nd e f\ng h\n")
    write("tgt.txt", b"c b a\nf e d\nh g\n")
    write("short.txt", b"c b a\nf e d\n")
    write("bad_utf8.txt", b"a b c\nd \xff f\ng h\n")
    write("afile", b"a file, not a folder\n")
    write("existing.out", b"an earlier output\n")
    write("existing.png", b"an earlier plot\n")
    write("bad.yaml", b"train:\n  lr: [0.1\n")
    for name in ("adir", "plots.png", "notmodel", "folder.src", "folder.tgt"):
        (ws / name).mkdir()
        write(f"{name}/keep.txt", b"keep me\n")
    raw = toy_data.parent
    for lang in ("src", "tgt"):
        shutil.copy(raw / f"train.{lang}", ws / f"train.{lang}")
        shutil.copy(raw / f"train.{lang}", ws / f"mismatch.{lang}")
        shutil.copy(raw / f"train.{lang}", ws / f"badutf.{lang}")
        write(f"empty.{lang}", b"")
    lines = (ws / "mismatch.tgt").read_bytes().splitlines(keepends=True)
    write("mismatch.tgt", b"".join(lines[:-1]))
    lines = (ws / "badutf.src").read_bytes().splitlines(keepends=True)
    lines[4] = b"a \xfe b\n"
    write("badutf.src", b"".join(lines))
    shutil.copytree(toy_model, ws / "model")
    shutil.copytree(toy_model, ws / "damaged")
    flip_bytes(ws / "damaged" / "best.pt")
    shutil.copytree(toy_model, ws / "damaged_state")
    for state in (ws / "damaged_state").glob("train_state*.pt"):
        flip_bytes(state)
    shutil.copytree(toy_data, ws / "longdata")
    manifest = json.loads((ws / "longdata" / "manifest.json").read_text("utf-8"))
    manifest["config"]["clean"]["max_pieces"] = 2  # shorter than its sentences
    (ws / "longdata" / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return ws


def expand(case: Case, paths: dict[str, Path]) -> list[str]:
    """The argv of ``case``: its prefix (``{tr}``, ...) and paths (``{ws}``, ``{data}``,
    ``{model}``, ``{encdec}``, ``{ro}``) filled in, and ``-q`` added for the commands that have
    it, so that stderr holds errors only."""
    fields = {**PREFIXES, **{name: str(path) for name, path in paths.items()}}
    template = case.argv.format(**fields)
    argv = shlex.split(template.format(**fields))
    if case.quiet and argv[0] in QUIET_COMMANDS:
        argv.append("-q")
    return argv


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_gives_one_error_line_and_changes_nothing(
    case: Case,
    workspace: Path,
    toy_data: Path,
    toy_model: Path,
    toy_model_without_attention: Path,
    mounts: Mounts,
) -> None:
    if "cuda" in case.argv and HAS_CUDA:
        pytest.skip("this machine has CUDA")
    paths = {"ws": workspace, "data": toy_data, "model": toy_model}
    paths["encdec"] = toy_model_without_attention
    if "{ro}" in case.argv:
        paths["ro"] = mounts.tmpfs("ro", read_only=True)
    watched = [workspace, toy_data, toy_model]
    before = snapshot(*watched)
    result = invoke(expand(case, paths), input=case.stdin)
    if case.status == 0:
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output
        assert case.fragment in result.stderr, result.stderr
    else:
        assert_one_error_line(
            result.exit_code, result.stdout, result.stderr, case.status, case.fragment
        )
    assert_unchanged(before, *watched)
    if "ro" in paths:
        assert list(paths["ro"].iterdir()) == []


# ------------------------------------------------------------------------------ not errors


def test_a_byte_order_mark_changes_no_score(workspace: Path) -> None:
    (workspace / "bom.txt").write_bytes(b"\xef\xbb\xbf" + (workspace / "tgt.txt").read_bytes())
    args = ["score", "-r", str(workspace / "tgt.txt"), "--json", "-q"]
    plain = invoke([*args, "-i", str(workspace / "tgt.txt")])
    marked = invoke([*args, "-i", str(workspace / "bom.txt")])
    assert plain.exit_code == 0 and marked.exit_code == 0, marked.output
    scores = [
        [(s["name"], s["text"]) for s in json.loads(result.stdout)["scores"]]
        for result in (plain, marked)
    ]
    assert scores[1] == scores[0]


def test_a_byte_order_mark_changes_no_translation(workspace: Path, toy_model: Path) -> None:
    args = ["translate", "-m", str(toy_model), "--greedy", "-q"]
    plain = invoke(args, input=b"a b c\nd e f\n")
    marked = invoke(args, input=b"\xef\xbb\xbfa b c\nd e f\n")
    assert plain.exit_code == 0 and marked.exit_code == 0, marked.output
    assert marked.stdout == plain.stdout


def test_translate_into_a_closed_pipe_exits_141_quietly(toy_model: Path, tmp_path: Path) -> None:
    """``nmtkit translate ... | head -1``: the reader leaves, translate ends with SIGPIPE's 141."""
    source = tmp_path / "many.txt"
    source.write_text("a b c d\n" * 1000, "utf-8")
    command = [*NMTKIT, "translate", "-m", str(toy_model), "-i", str(source), "--greedy", "-q"]
    process = spawn(
        [*command, "--chunk-size", "1", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        restore_signals=True,  # SIGPIPE as a shell would leave it: Python ignores it anyway
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() != b""
    process.stdout.close()  # what `head -1` does after its line
    stderr = process.stderr.read().decode("utf-8", "replace")
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE, stderr
    assert stderr == ""
