"""benchmarks/gpu_check.sh where no GPU is: its argument checks, its one-line FAIL on a torch
without CUDA, how a check's outcome becomes a line and the exit status; and nmtkit's one error
line for a GPU index past the last one (``--device cuda:7``), on this build and with one GPU
made to appear."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch

from tests.cli.runs import invoke
from tests.reliability.checks import NMTKIT, assert_one_error_line

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def gpu_check(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the script as a user would, with this interpreter."""
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NMTKIT_PYTHON": sys.executable},
        timeout=120,
    )


def assert_usage_line(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_check: error: "), result.stderr
    assert fragment in lines[0], (fragment, lines[0])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--device", "tpu"], "--device tpu: choose cuda, cuda:N or cpu"),
        (["--device", "cuda:x"], "--device cuda:x: choose cuda, cuda:N or cpu"),
        (["--quick", "--device"], "argument --device: expected one argument"),
        (["--data", "/"], "--data /: no train.en.gz there"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    assert_usage_line(gpu_check(*args), fragment)


def test_out_must_be_a_folder_the_script_may_empty(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert_usage_line(gpu_check("--out", str(a_file)), f"--out {a_file}: not a folder")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert_usage_line(gpu_check("--out", str(mine)), "holds files this script did not write")
    assert (mine / "notes.txt").read_text() == "keep me"


def test_without_cuda_it_fails_in_one_line_before_any_work(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "out"
    result = gpu_check("--out", str(out))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("FAIL cuda: no CUDA device: torch "), lines
    assert "docs/scale.md#gpu-check" in lines[0]
    assert sorted(p.name for p in out.iterdir()) == [".gpu-check", "logs"]  # nothing trained


def load_gpu_check() -> ModuleType:
    """benchmarks/gpu_check.py as a module (its siblings import from benchmarks/)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(
            "gpu_check", ROOT / "benchmarks" / "gpu_check.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["gpu_check"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_every_outcome_is_one_line_and_sets_the_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpu_check = load_gpu_check()
    report = gpu_check.Report(tmp_path)

    def failed() -> str:
        raise gpu_check.Failed("loss went\nup")

    def skipped() -> str:
        raise gpu_check.Skipped("needs CUDA")

    def crashed() -> str:
        raise KeyError("val_bleu")

    assert report.check("a", lambda: "fine")
    assert not report.check("b", failed)
    assert not report.check("c", skipped)
    assert not report.check("d", crashed)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["ok a: fine", "FAIL b: loss went up", "skip c: needs CUDA"]
    assert lines[3] == f"FAIL d: KeyError: 'val_bleu' (traceback: {tmp_path / 'd.traceback'})"
    assert "KeyError" in (tmp_path / "d.traceback").read_text()
    assert report.exit_status(allow_skip=True) == 1  # a FAIL always counts
    clean = gpu_check.Report(tmp_path, counts={"ok": 3, "FAIL": 0, "skip": 1})
    assert clean.exit_status(allow_skip=False) == 1
    assert clean.exit_status(allow_skip=True) == 0


NO_CUDA = "--device cuda:7: this torch build has no CUDA (install a torch build with CUDA"


def cuda7_args(command: str, tmp_path: Path) -> list[str]:
    """``command`` with ``--device cuda:7``; the model and data are never read: the device is
    checked first (after the files align and score-pairs read, which must exist)."""
    model = str(tmp_path / "model")
    text = tmp_path / "text"
    text.write_text("A dog runs.\n")
    pairs = ["--source", str(text), "--target", str(text)]
    args = {
        "train": ["train", str(tmp_path / "data"), "-o", model],
        "translate": ["translate", "-m", model],
        "align": ["align", "-m", model, *pairs],
        "score-pairs": ["score-pairs", "-m", model, *pairs],
        "serve": ["serve", "-m", model, "--port", "0"],
    }[command]
    return [*args, "--device", "cuda:7"]


@pytest.mark.parametrize("command", ["train", "translate", "align", "score-pairs", "serve"])
def test_a_gpu_index_on_a_build_without_cuda_is_one_line(command: str, tmp_path: Path) -> None:
    if torch.backends.cuda.is_built():
        pytest.skip("this torch has CUDA: benchmarks/gpu_check.sh checks cuda:7 there")
    result = invoke(cuda7_args(command, tmp_path))
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, 2, NO_CUDA)
    assert not (tmp_path / "model").exists()


def test_a_gpu_index_on_a_build_without_cuda_is_one_line_in_a_real_process(
    tmp_path: Path,
) -> None:
    if torch.backends.cuda.is_built():
        pytest.skip("this torch has CUDA: benchmarks/gpu_check.sh checks cuda:7 there")
    result = subprocess.run(
        [*NMTKIT, *cuda7_args("train", tmp_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert_one_error_line(result.returncode, result.stdout, result.stderr, 2, NO_CUDA)
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("command", ["train", "translate", "align", "score-pairs", "serve"])
def test_a_gpu_index_past_the_only_gpu_is_one_line(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a one-GPU machine shows, made to appear: CUDA built and one device visible."""
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    result = invoke(cuda7_args(command, tmp_path))
    assert_one_error_line(
        result.exit_code,
        result.stdout,
        result.stderr,
        2,
        "--device cuda:7: only 1 GPU here (cuda:0)",
    )
    assert not (tmp_path / "model").exists()


def test_the_cuda_check_names_the_gpu_it_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first check on a one-GPU machine, made to appear (the line it prints, and the
    refusal of a GPU index that is not there)."""
    load_gpu_check()
    import gpu_check_run

    h200 = SimpleNamespace(name="NVIDIA H200", total_memory=141 * 2**30, major=9, minor=0)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: h200)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91002)
    run = gpu_check_run.Run(device="cuda", sizes=gpu_check_run.FULL, out=Path("unused"))
    line = gpu_check_run.check_cuda(run)
    assert line.startswith("NVIDIA H200, 141 GiB, compute capability 9.0, native bf16, TF32 cuBLAS")
    assert "cuDNN 91002" in line
    elsewhere = gpu_check_run.Run(device="cuda:3", sizes=gpu_check_run.FULL, out=Path("unused"))
    with pytest.raises(gpu_check_run.Failed, match=r"no CUDA device cuda:3: 1 GPU\(s\) here"):
        gpu_check_run.check_cuda(elsewhere)
