"""The translation page of ``nmtkit serve`` in a real headless Chromium (Debian's, driven by
playwright), over the tiny model that learned to reverse sequences, so that its attention is a
known alignment (target word j looks at source word n-1-j): what a person sees equals what
``nmtkit translate`` and ``nmtkit align`` write, hovering lights the aligned words, a corrected
translation is completed from its prefix, hostile input stays text, and the server's refusals
read as messages. A screenshot of the page is kept in ``test-artifacts/``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page

from nmtkit.checkpoint import load_model
from nmtkit.data.text import words
from tests.browser import launch
from tests.cli.runs import Invoke, invoke, translate_jsonl
from tests.cli.server_process import Server, running_server
from tests.integration.learned import REVERSAL_GROUP, LearnedModel
from tests.toy_corpora import reverse_pairs

pytestmark = REVERSAL_GROUP

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT_MS = 60_000  # a translation on a busy machine
MAX_CHARS = 200


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        try:
            launched = launch(playwright)
        except FileNotFoundError as exc:
            pytest.fail(str(exc))
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def model_dir(reversal_model: LearnedModel) -> Path:
    return reversal_model.path


@pytest.fixture(scope="module")
def sources() -> list[str]:
    return [source for source, _ in reverse_pairs(8, seed=3, min_len=5)]


@pytest.fixture
def cli() -> Invoke:
    return invoke


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve-page")
    with running_server(model_dir, folder, "--max-chars", str(MAX_CHARS)) as started:
        yield started


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
    opened.goto(f"{server.url}/")
    opened.wait_for_function("() => document.querySelector('#beam').value !== ''", timeout=WAIT_MS)
    yield opened
    context.close()
    assert not errors, errors  # no script error, and no alert from anything typed


def translate_on_page(page: Page, lines: list[str], **options: str) -> None:
    page.fill("#source", "\n".join(lines))
    for field, value in options.items():
        page.fill(f"#{field}", value)
    page.click("#translate")
    page.wait_for_function(
        f"() => document.querySelectorAll('#results .sentence').length === {len(lines)}"
        " && !document.querySelector('#translate').disabled",
        timeout=WAIT_MS,
    )


def align_links(
    cli: Invoke, model_dir: Path, lines: list[str], hyps: list[str], folder: Path
) -> list[set[tuple[int, ...]]]:
    """``nmtkit align``'s links (its default method) for each pair, as sets of (i, j)."""
    (folder / "src").write_text("".join(f"{line}\n" for line in lines), "utf-8")
    (folder / "hyp").write_text("".join(f"{line}\n" for line in hyps), "utf-8")
    args = ["align", "-m", str(model_dir), "--source", str(folder / "src")]
    result = cli([*args, "--target", str(folder / "hyp"), "--threads", "1"])
    assert result.exit_code == 0, result.output
    return [
        {tuple(map(int, link.split("-"))) for link in line.split()}
        for line in result.stdout.splitlines()
    ]


def test_translations_and_heatmaps_equal_translate_and_align(
    page: Page, cli: Invoke, model_dir: Path, sources: list[str], tmp_path: Path
) -> None:
    lines = sources[:3]
    translate_on_page(page, lines)
    expected = translate_jsonl(cli, model_dir, lines)
    hyps = [record["hyp"] for record in expected]
    assert hyps == [" ".join(reversed(line.split())) for line in lines]  # a model that learned
    assert page.eval_on_selector_all(".translation", "nodes => nodes.map(n => n.value)") == hyps
    scores = page.eval_on_selector_all(".output .score", "nodes => nodes.map(n => n.textContent)")
    assert scores == [f"score {record['score']:.3f}" for record in expected]

    loaded = load_model(model_dir)
    src_text, tgt_text = loaded.src_text, loaded.tgt_text
    links = align_links(cli, model_dir, lines, hyps, tmp_path)
    for k, (line, hyp) in enumerate(zip(lines, hyps, strict=True)):
        table = page.locator(".sentence").nth(k).locator("table.heatmap")
        source = words(src_text.id_to_piece(src_text.encode(line)))
        target = words(tgt_text.id_to_piece(tgt_text.encode(hyp)))
        assert table.locator("th.src").all_text_contents() == source == line.split()
        assert table.locator("th.tgt").all_text_contents() == target == hyp.split()
        assert table.locator("tbody tr").count() == len(target)
        for row in range(len(target)):
            assert table.locator("tbody tr").nth(row).locator("td").count() == len(source)
        outlined = table.locator("td.link").evaluate_all(
            "cells => cells.map(c => [Number(c.dataset.i), Number(c.dataset.j)])"
        )
        assert {tuple(link) for link in outlined} == links[k]
        n = len(source)
        assert len(links[k] & {(n - 1 - j, j) for j in range(n)}) >= n - 1  # reversal

    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("th.tgt").first.hover()
    page.screenshot(path=str(ARTIFACTS / "serve-page.png"), full_page=True)


def lit(table: Locator, side: str) -> list[int]:
    key = "i" if side == "src" else "j"
    return table.locator(f"th.{side}.lit").evaluate_all(
        f"nodes => nodes.map(n => Number(n.dataset.{key}))"
    )


def test_hovering_a_word_lights_the_words_it_is_aligned_to(page: Page, sources: list[str]) -> None:
    translate_on_page(page, sources[3:4])
    table = page.locator("table.heatmap")
    links = table.locator("td.link").evaluate_all(
        "cells => cells.map(c => [Number(c.dataset.i), Number(c.dataset.j)])"
    )
    assert links and lit(table, "src") == lit(table, "tgt") == []
    for i, j in links[:3]:
        table.locator(f'th.tgt[data-j="{j}"]').hover()
        assert i in lit(table, "src") and lit(table, "tgt") == [j]
        table.locator(f'th.src[data-i="{i}"]').hover()
        assert j in lit(table, "tgt") and lit(table, "src") == [i]
    page.mouse.move(0, 0)
    assert table.locator(".lit").count() == 0


def test_nbest_and_beam_options_equal_translate_with_them(
    page: Page, cli: Invoke, model_dir: Path, sources: list[str]
) -> None:
    lines = sources[4:6]
    translate_on_page(page, lines, beam="3", nbest="3")
    expected = translate_jsonl(cli, model_dir, lines, "--beam", "3", "--nbest", "3")
    for k, record in enumerate(expected):
        shown = page.locator(".sentence").nth(k).locator(".nbest button.pick")
        assert shown.all_text_contents() == [entry["hyp"] for entry in record["nbest"]]
    page.locator(".sentence").first.locator(".nbest button.pick").nth(2).click()
    assert page.locator(".translation").first.input_value() == expected[0]["nbest"][2]["hyp"]
    target = page.locator(".sentence").first.locator("th.tgt").all_text_contents()
    assert target == expected[0]["nbest"][2]["hyp"].split()  # the heatmap follows the pick


def test_a_corrected_translation_is_completed_from_its_prefix(
    page: Page, cli: Invoke, model_dir: Path, sources: list[str], tmp_path: Path
) -> None:
    line = sources[6]
    translate_on_page(page, [line])
    output = page.locator(".translation")
    first = output.input_value()
    words_out = first.split()
    other = next(symbol for symbol in "abcdefghijkl" if symbol != words_out[1])
    corrected = f"{words_out[0]} {other}"  # the second word corrected, the rest dropped
    output.fill(corrected)
    output.press("End")
    output.press("Enter")
    page.wait_for_function(
        "(text) => { const o = document.querySelector('.translation');"
        " return o.value !== text && !o.closest('.sentence').classList.contains('busy'); }",
        arg=corrected,
        timeout=WAIT_MS,
    )
    (tmp_path / "prefix").write_text(f"{corrected}\n", "utf-8")
    [record] = translate_jsonl(cli, model_dir, [line], "--prefix", str(tmp_path / "prefix"))
    assert output.input_value() == record["hyp"] != first
    assert record["hyp"].startswith(corrected) and len(record["hyp"]) > len(corrected)
    rows = page.locator("table.heatmap th.tgt").all_text_contents()
    assert rows == record["hyp"].split()  # the heatmap is the completion's


def test_markup_typed_in_shows_as_text_and_runs_nothing(page: Page) -> None:
    hostile = "<img src=x onerror=\"document.title='pwned'\"> <script>alert(1)</script>"
    translate_on_page(page, [hostile])
    assert page.locator(".sentence .source").text_content() == hostile
    assert page.locator("#results img, #results script").count() == 0
    heading = page.locator("th.src").all_text_contents()  # pieces outside the toy vocabulary
    assert heading and all("<unk>" in word for word in heading)  # as text, not as a tag
    assert page.title() != "pwned"


def test_the_servers_refusal_shows_as_a_message(page: Page) -> None:
    page.fill("#source", "a " * (MAX_CHARS // 2) + "b")
    page.keyboard.press("Control+Enter")
    error = page.locator("#error")
    error.wait_for(state="visible", timeout=WAIT_MS)
    assert error.text_content() == (
        f"413: text[0] has {MAX_CHARS + 1} characters; this server takes at most {MAX_CHARS} "
        "a sentence (--max-chars)"
    )
    page.fill("#beam", "99")
    page.fill("#source", "a b c")
    page.click("#translate")
    page.wait_for_function(
        "() => document.querySelector('#error').textContent.startsWith('422')", timeout=WAIT_MS
    )
    assert "--max-beam" in error.text_content() and page.locator(".sentence").count() == 0
