"""Third-party components: the example package in tests/plugin_package plugs a ``cosine``
attention scorer in through the ``nmtkit.plugins`` entry point (installed into a temporary
folder with pip) and through ``--user-dir``; the CLI trains and translates with it by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import child_env, run

PLUGIN_PROJECT = Path(__file__).parents[1] / "plugin_package"
PLUGIN_FOLDER = PLUGIN_PROJECT / "nmtkit_cosine"
TRAIN = ["--preset", "tiny", "--set", "model.attention=cosine", "--max-updates", "30"]


def nmtkit(*args: str, site: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    """Run ``python -m nmtkit ARGS`` in a fresh process, with ``site`` on its import path."""
    env = child_env(PYTHONPATH=None if site is None else str(site))
    return run(
        [sys.executable, "-m", "nmtkit", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin, built and installed (metadata and entry point included) by pip."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "--disable-pip-version-check", "--target", str(target)]
        + [str(PLUGIN_PROJECT)],
        check=True,
        cwd=build,
        env=child_env(PIP_NO_INPUT="1"),
    )
    return target


def registered_attention(*args: str, site: Path | None = None) -> dict[str, dict]:
    run = nmtkit("list", "attention", "--json", *args, site=site)
    assert run.returncode == 0, run.stderr
    return {item["name"]: item for item in json.loads(run.stdout)}


def test_an_installed_plugin_is_listed_with_its_options_and_provider(site: Path) -> None:
    listed = registered_attention(site=site)
    cosine = listed["cosine"]
    assert cosine["provider"] == "nmtkit_cosine"
    assert {o["name"]: o["default"] for o in cosine["options"]} == {
        "hidden_size": 128,
        "init_sharpness": 5.0,
    }
    assert "cosine" not in registered_attention()  # not installed: not there


def test_an_installed_plugin_trains_and_translates_by_name(
    site: Path, reverse_data: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model"
    trained = nmtkit("train", str(reverse_data), "-o", str(model), *TRAIN, site=site)
    assert trained.returncode == 0, trained.stderr
    inputs = "a b c d\nk j i\n"
    translated = nmtkit("translate", "-m", str(model), stdin=inputs, site=site)
    assert translated.returncode == 0, translated.stderr
    assert len(translated.stdout.splitlines()) == 2

    missing = nmtkit("translate", "-m", str(model), stdin=inputs)
    assert missing.returncode == 1
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in missing.stderr
    assert "'cosine'" in lines[0] and "nmtkit-cosine" in lines[0]


def test_a_user_dir_plugin_trains_and_translates_by_name(
    reverse_data: Path, tmp_path: Path
) -> None:
    model, user_dir = tmp_path / "model", ["--user-dir", str(PLUGIN_FOLDER)]
    trained = nmtkit("train", str(reverse_data), "-o", str(model), *TRAIN, *user_dir)
    assert trained.returncode == 0, trained.stderr
    translated = nmtkit("translate", "-m", str(model), *user_dir, stdin="a b c\n")
    assert translated.returncode == 0, translated.stderr
    assert len(translated.stdout.splitlines()) == 1
    assert "cosine" in registered_attention(*user_dir)

    missing = nmtkit("translate", "-m", str(model), stdin="a b c\n")
    assert missing.returncode == 1 and "--user-dir" in missing.stderr


def test_a_missing_user_dir_is_a_one_line_error(tmp_path: Path) -> None:
    run = nmtkit("list", "--user-dir", str(tmp_path / "nowhere"))
    assert run.returncode != 0
    assert run.stderr.strip().count("\n") == 0 and "no such folder" in run.stderr
