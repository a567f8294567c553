"""``nmtkit serve`` as a client sees it: a real server in a subprocess answers exactly what
``nmtkit translate`` writes for the same lines, alone, in one request or from concurrent
clients; every bad request gets a JSON error; SIGTERM answers the requests in flight and exits 0;
start-up errors are one line."""

from __future__ import annotations

import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nmtkit.checkpoint import load_model
from nmtkit.data.datadir import sha256_file
from tests.cli.runs import Invoke, translate_jsonl
from tests.cli.server_process import (
    TIMEOUT,
    Server,
    refuses_connections,
    running_server,
    wait_until,
)
from tests.cli.test_cli_errors import assert_user_error
from tests.processes import send

# One worker runs them all: the servers of the module fixtures start once.
pytestmark = pytest.mark.xdist_group("serve")

NUM_LINES = 24  # validation sentences translated
WIDE = {"beam_size": 3, "nbest": 3, "alignment": True}  # a second search, with n-best and links
WIDE_FLAGS = ["--beam", "3", "--nbest", "3"]
# Small enough for the 413 cases to stay small: the body limit is about 32 x 400 x 12 bytes.
MAIN_FLAGS = ("--max-sentences", "32", "--max-chars", "400")


@pytest.fixture(scope="module")
def sources(val_pairs: tuple[list[str], list[str]]) -> list[str]:
    return val_pairs[0][:NUM_LINES]


@pytest.fixture(scope="module")
def expected(cli: Invoke, model_dir: Path, sources: list[str]) -> list[dict]:
    """What ``nmtkit translate`` writes for the sources with the model's own search."""
    return translate_jsonl(cli, model_dir, sources)


@pytest.fixture(scope="module")
def expected_wide(cli: Invoke, model_dir: Path, sources: list[str]) -> list[dict]:
    return translate_jsonl(cli, model_dir, sources, *WIDE_FLAGS)


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(model_dir, tmp_path_factory.mktemp("serve"), *MAIN_FLAGS) as started:
        yield started


def assert_same(answer: dict[str, Any], record: dict[str, Any], *, nbest: bool = False) -> None:
    """One translation of the server equals a jsonl record of translate (scores to 1e-4)."""
    assert answer["text"] == record["hyp"]
    assert answer["score"] == pytest.approx(record["score"], abs=1e-4)
    if nbest:
        assert answer["alignment"] == record["alignment"]
        for mine, theirs in zip(answer["nbest"], record["nbest"], strict=True):
            assert (mine["text"], mine["alignment"]) == (theirs["hyp"], theirs["alignment"])
            assert mine["score"] == pytest.approx(theirs["score"], abs=1e-4)
    else:
        assert "nbest" not in answer and "alignment" not in answer


# ---------------------------------------------------------------------------------- answers


def test_one_request_of_many_lines_equals_translate(
    server: Server, sources: list[str], expected: list[dict]
) -> None:
    response = server.post({"text": sources})
    assert response.status_code == 200, response.text
    answers = response.json()["translations"]
    assert len(answers) == len(sources)
    for answer, record in zip(answers, expected, strict=True):
        assert_same(answer, record)


def test_a_single_string_gets_a_list_of_one(
    server: Server, sources: list[str], expected: list[dict]
) -> None:
    response = server.post({"text": sources[3]})
    assert response.status_code == 200, response.text
    [answer] = response.json()["translations"]
    assert_same(answer, expected[3])


def test_nbest_and_alignment_equal_translate_with_the_same_search(
    server: Server, sources: list[str], expected_wide: list[dict]
) -> None:
    response = server.post({"text": sources, **WIDE})
    assert response.status_code == 200, response.text
    for answer, record in zip(response.json()["translations"], expected_wide, strict=True):
        assert len(answer["nbest"]) == 3
        assert_same(answer, record, nbest=True)


def test_concurrent_clients_with_two_searches_each_get_their_own_answers(
    server: Server, sources: list[str], expected: list[dict], expected_wide: list[dict]
) -> None:
    """Eight clients, one sentence a request, half of them with another search: requests
    share batches only with their own search, and every answer is translate's."""
    answers: dict[tuple[int, bool], dict[str, Any]] = {}

    def client(number: int) -> None:
        wide = number % 2 == 1
        with httpx.Client(timeout=TIMEOUT) as http:
            for i in range(number, len(sources), 8):
                body = {"text": sources[i], **(WIDE if wide else {})}
                response = http.post(f"{server.url}/translate", json=body)
                assert response.status_code == 200, response.text
                answers[i, wide] = response.json()["translations"][0]

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
    assert len(answers) == len(sources)
    for (i, wide), answer in answers.items():
        assert_same(answer, (expected_wide if wide else expected)[i], nbest=wide)


def test_an_empty_line_translates_to_an_empty_one(server: Server) -> None:
    response = server.post({"text": ["", "  "]})
    assert response.status_code == 200, response.text
    assert [t["text"] for t in response.json()["translations"]] == ["", ""]


def test_model_and_health_describe_the_server(server: Server, model_dir: Path) -> None:
    info = httpx.get(f"{server.url}/model", timeout=TIMEOUT).json()
    loaded = load_model(model_dir)
    assert (info["src_lang"], info["tgt_lang"]) == ("en", "de")
    assert info["src_vocab_size"] == loaded.src_text.vocab_size
    assert info["tgt_vocab_size"] == loaded.tgt_text.vocab_size
    assert info["vocabulary_fingerprint"] == loaded.vocab.fingerprint
    [model] = info["models"]
    assert model["sha256"] == sha256_file(model_dir / "best.pt")
    assert info["config"]["search"]["strategy"]["name"] == info["search"]["strategy"]
    assert info["search"]["signature"].startswith(info["search"]["strategy"])
    assert info["limits"]["max_sentences"] == 32 and info["nmtkit_version"]
    assert server.health()["status"] == "ok"
    assert server.url.startswith("http://127.0.0.1:")  # the default host: this machine only
    spec = httpx.get(f"{server.url}/openapi.json", timeout=TIMEOUT).json()
    assert {"/translate", "/health", "/model"} <= set(spec["paths"])
    assert httpx.get(f"{server.url}/docs", timeout=TIMEOUT).status_code == 200


def test_an_ensemble_is_served_as_translate_translates_it(
    cli: Invoke, model_dir: Path, sources: list[str], tmp_path: Path
) -> None:
    expected = translate_jsonl(cli, model_dir, sources[:4], "-m", str(model_dir))
    with running_server(model_dir, tmp_path, "-m", str(model_dir)) as ensemble:
        response = ensemble.post({"text": sources[:4]})
        info = httpx.get(f"{ensemble.url}/model", timeout=TIMEOUT).json()
    assert response.status_code == 200, response.text
    for answer, record in zip(response.json()["translations"], expected, strict=True):
        assert_same(answer, record)
    assert [m["path"] for m in info["models"]] == [str(model_dir / "best.pt")] * 2


def test_a_prefix_per_sentence_equals_translate_with_a_prefix_file(
    cli: Invoke, model_dir: Path, server: Server, sources: list[str], tmp_path: Path
) -> None:
    """What the page's completion asks: each sentence with its own forced prefix ('' for
    none), as ``translate --prefix`` translates them."""
    lines = sources[:3]
    prefixes = ["Ein Mann", "", "Zwei"]
    prefix_file = tmp_path / "prefixes.de"
    prefix_file.write_text("".join(f"{p}\n" for p in prefixes), "utf-8")
    expected = translate_jsonl(cli, model_dir, lines, "--prefix", str(prefix_file))
    response = server.post({"text": lines, "prefix": prefixes})
    assert response.status_code == 200, response.text
    for answer, record in zip(response.json()["translations"], expected, strict=True):
        assert_same(answer, record)
    assert expected[0]["hyp"].startswith("Ein Mann") and expected[2]["hyp"].startswith("Zwei")
    one = server.post({"text": lines[0], "prefix": prefixes[0]})
    assert one.json()["translations"][0]["text"] == expected[0]["hyp"]


def test_attention_is_the_word_matrix_the_links_are_read_off(
    server: Server, model_dir: Path, sources: list[str]
) -> None:
    """One row per target word, one column per source word, rows summing to 1, and each
    target word's link at its row's largest weight (a prefix makes the tiny model's outputs
    words long)."""
    from nmtkit.data.text import words

    body = {"text": sources[:4], "prefix": ["Ein Mann"] * 4, "attention": True, "alignment": True}
    response = server.post(body)
    assert response.status_code == 200, response.text
    src_text = load_model(model_dir).src_text
    for line, answer in zip(sources, response.json()["translations"], strict=False):
        attention = answer["attention"]
        assert attention["source"] == words(src_text.id_to_piece(src_text.encode(line)))
        assert len(attention["weights"]) == len(attention["target"]) >= 2
        assert attention["target"][:2] == ["Ein", "Mann"]
        links = sorted(tuple(map(int, link.split("-"))) for link in answer["alignment"].split())
        rows = attention["weights"]
        for row in rows:
            assert len(row) == len(attention["source"])
            assert sum(row) == pytest.approx(1.0, abs=1e-3)
        # One link a target word, at its row's largest weight: within the answer's rounding to
        # 4 decimals, where a barely trained model's near-uniform rows may tie.
        assert sorted(j for _, j in links) == list(range(len(rows)))
        for i, j in links:
            assert rows[j][i] >= max(rows[j]) - 1e-4
    without = server.post({"text": sources[0], "attention": True}).json()["translations"][0]
    assert "attention" in without and "alignment" not in without


def test_the_page_is_served_with_a_content_security_policy(server: Server) -> None:
    page = httpx.get(f"{server.url}/", timeout=TIMEOUT)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "<script" in page.text and "static/page.js" in page.text
    for name, kind in (("page.js", "javascript"), ("page.css", "css")):
        asset = httpx.get(f"{server.url}/static/{name}", timeout=TIMEOUT)
        assert asset.status_code == 200 and kind in asset.headers["content-type"]
    spec = httpx.get(f"{server.url}/openapi.json", timeout=TIMEOUT).json()
    assert "/" not in spec["paths"]  # the page is not part of the API


def test_no_page_leaves_slash_a_404(model_dir: Path, tmp_path: Path) -> None:
    with running_server(model_dir, tmp_path, "--no-page") as api_only:
        response = httpx.get(f"{api_only.url}/", timeout=TIMEOUT)
        static = httpx.get(f"{api_only.url}/static/page.js", timeout=TIMEOUT)
        translated = api_only.post({"text": "A dog."})
    assert response.status_code == 404 and "no such path: /" in response.json()["error"]
    assert static.status_code == 404 and translated.status_code == 200
    assert "translation page" not in api_only.stderr()


# ----------------------------------------------------------------------------- bad requests

BAD_REQUESTS = [
    pytest.param({"json": {"text": ["a"] * 33}}, 413, "at most 32 (--max-sentences)", id="lines"),
    pytest.param(
        {"json": {"text": ["a"], "prefix": ["b" * 401]}}, 413, "prefix[0] has 401", id="prefix"
    ),
    pytest.param(
        {"json": {"text": ["a", "b"], "prefix": ["c"]}}, 422, "1 prefixes for 2", id="prefixes"
    ),
    pytest.param({"json": {"text": "a", "prefix": ["c"]}}, 422, "should be a string", id="pfx"),
    pytest.param({"json": {"text": ["a", "b" * 401]}}, 413, "text[1] has 401", id="chars"),
    pytest.param({"json": {"text": "x" * 300_000}}, 413, "body is over", id="body"),
    pytest.param({"content": b'{"text": ["a"'}, 422, "not valid JSON", id="bad-json"),
    pytest.param({"json": {"text": 5}}, 422, "string or a list of strings", id="text-type"),
    pytest.param({"json": {"text": ["a", 7]}}, 422, "text[1]: should be a string", id="item"),
    pytest.param({"json": {"text": "a", "beam_size": "3"}}, 422, "beam_size", id="beam-type"),
    pytest.param({"json": {"text": "a", "beam": 3}}, 422, "beam: Extra inputs", id="unknown"),
    pytest.param({"json": {"sentences": ["a"]}}, 422, "text: Field required", id="no-text"),
    pytest.param({"json": ["a"]}, 422, "must be a JSON object", id="not-object"),
    pytest.param({"json": {"text": "a", "beam_size": 17}}, 422, "at most 16", id="max-beam"),
    pytest.param({"json": {"text": "a", "nbest": 9}}, 422, "nbest must be", id="nbest"),
    pytest.param(
        {"json": {"text": "a", "sampling": True, "beam_size": 2}},
        422,
        "cannot be combined",
        id="conflict",
    ),
    pytest.param(
        {"content": b'{"text": "a", "length_penalty": NaN}'}, 422, "finite number", id="nan"
    ),
    pytest.param(
        {"content": b'{"text": ["a", "\\ud800 b"]}'}, 422, "text[1] is not Unicode", id="surrogate"
    ),
    pytest.param(
        {"content": b'{"text": "a"}', "headers": {"content-type": "text/plain"}},
        422,
        "Content-Type: application/json",
        id="content-type",
    ),
]


@pytest.mark.parametrize(("request_args", "status", "fragment"), BAD_REQUESTS)
def test_a_bad_request_gets_a_one_line_json_error(
    server: Server, request_args: dict[str, Any], status: int, fragment: str
) -> None:
    headers = {"content-type": "application/json", **request_args.pop("headers", {})}
    response = httpx.post(
        f"{server.url}/translate", headers=headers, timeout=TIMEOUT, **request_args
    )
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert fragment in error and "\n" not in error


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/nowhere", 404), ("GET", "/translate", 405)]
)
def test_a_wrong_path_or_method_gets_a_json_error(
    server: Server, method: str, path: str, status: int
) -> None:
    response = httpx.request(method, f"{server.url}{path}", timeout=TIMEOUT)
    assert response.status_code == status
    assert path in response.json()["error"]


# ------------------------------------------------- batching and the queue bound (slow batches)


@pytest.fixture(scope="module")
def slow_server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Batches wait 3 s for company unless four sentences fill them; four may be queued."""
    flags = ("--batch-wait-ms", "3000", "--max-batch-sentences", "4", "--max-queue", "4")
    folder = tmp_path_factory.mktemp("serve-slow")
    with running_server(model_dir, folder, *flags, "--max-sentences", "4") as started:
        yield started


def post_in_thread(server: Server, body: Any, into: list[httpx.Response]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.append(server.post(body)))
    thread.start()
    return thread


def test_concurrent_requests_are_decoded_as_one_batch(
    slow_server: Server, sources: list[str], expected: list[dict]
) -> None:
    before = slow_server.health()
    responses: list[httpx.Response] = []
    threads = [post_in_thread(slow_server, {"text": sources[i]}, responses) for i in range(4)]
    for thread in threads:
        thread.join(TIMEOUT)
    assert len(responses) == 4 and all(r.status_code == 200 for r in responses)
    after = slow_server.health()
    assert after["batches"] - before["batches"] == 1  # four sentences fill a batch
    assert after["sentences"] - before["sentences"] == 4
    texts = sorted(r.json()["translations"][0]["text"] for r in responses)
    assert texts == sorted(record["hyp"] for record in expected[:4])


def test_a_request_over_the_queue_bound_gets_429_and_the_queued_one_its_answer(
    slow_server: Server, sources: list[str], expected: list[dict]
) -> None:
    responses: list[httpx.Response] = []
    waiting = post_in_thread(slow_server, {"text": sources[:3]}, responses)
    wait_until(lambda: slow_server.health()["queued_sentences"] == 3, what="3 queued")
    refused = slow_server.post({"text": sources[3:5]})
    assert refused.status_code == 429
    assert "limit of 4" in refused.json()["error"] and refused.headers["retry-after"] == "1"
    waiting.join(TIMEOUT)
    [answer] = responses
    assert answer.status_code == 200
    assert [t["text"] for t in answer.json()["translations"]] == [r["hyp"] for r in expected[:3]]


# -------------------------------------------------------------------------------- shutdown


def test_sigterm_answers_the_requests_in_flight_and_exits_0(
    model_dir: Path, tmp_path: Path, sources: list[str], expected: list[dict]
) -> None:
    with running_server(model_dir, tmp_path, "--batch-wait-ms", "2000") as server:
        responses: list[httpx.Response] = []
        threads = [post_in_thread(server, {"text": sources[i]}, responses) for i in range(5)]
        wait_until(lambda: server.health()["queued_sentences"] == 5, what="5 in flight")
        send(server.process, signal.SIGTERM)
        wait_until(lambda: refuses_connections(server.url), what="the listener to close")
        assert any(thread.is_alive() for thread in threads)  # closed while they wait
        for thread in threads:
            thread.join(TIMEOUT)
        assert server.process.wait(TIMEOUT) == 0
    assert len(responses) == 5 and all(r.status_code == 200 for r in responses)
    texts = sorted(r.json()["translations"][0]["text"] for r in responses)
    assert texts == sorted(record["hyp"] for record in expected[:5])
    log = server.stderr()
    assert "stopped (SIGTERM): every request was answered" in log and "Traceback" not in log
    assert server.stdout_path.read_text("utf-8") == ""


# --------------------------------------------------------------------------- start-up errors


def test_a_busy_port_is_a_one_line_error_before_the_model_loads(cli: Invoke) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli(["serve", "-m", "no-such-model", "--port", str(port)])
    assert_user_error(result, 1, f"cannot listen on 127.0.0.1:{port}", "Address already in use")


def test_a_missing_model_is_a_one_line_error(cli: Invoke, tmp_path: Path) -> None:
    result = cli(["serve", "-m", str(tmp_path / "none"), "--port", "0"])
    assert_user_error(result, 1, "no such model file or directory")


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--max-queue", "8", "--max-sentences", "16"], "--max-queue (8) must be at least"),
        (["--max-chars", "0"], "--max-chars must be at least 1"),
        (["--batch-wait-ms", "-1"], "--batch-wait-ms must be 0 or more"),
        (["--port", "70000"], "--port must be between 0 and 65535"),
    ],
)
def test_limits_out_of_range_are_refused(cli: Invoke, flags: list[str], fragment: str) -> None:
    assert_user_error(cli(["serve", "-m", "no-such-model", *flags]), 2, fragment)


def test_without_the_serve_extra_the_error_names_it(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi raises ImportError
    result = cli(["serve", "-m", "no-such-model"])
    assert_user_error(result, 2, "fastapi is needed", "pip install 'nmtkit[serve]'")


def test_serve_help_lists_its_options(cli: Invoke) -> None:
    result = cli(["serve", "--help"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    for option in ("--host", "--port", "--max-queue", "--max-beam", "--batch-wait-ms"):
        assert option in text
