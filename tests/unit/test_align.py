"""Subword merging, link extraction, soft records and heatmaps."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmtkit.alignment.heatmap import plot_heatmap, soft_record
from nmtkit.alignment.links import argmax_links, extractor, merge_to_words, threshold_links
from nmtkit.errors import ConfigError, DataError


def _word_index(pieces_per_word: list[int]) -> list[int]:
    return [word for word, count in enumerate(pieces_per_word) for _ in range(count)]


# ---- merge_to_words -------------------------------------------------------------------------


def test_merge_sums_source_pieces_and_averages_target_pieces() -> None:
    # src pieces: ▁Ein ▁Ha us -> words Ein Haus; tgt pieces: ▁A ▁ho use -> words A house
    weights = np.array([[0.5, 0.25, 0.25], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    merged = merge_to_words(weights, src_word_index=[0, 1, 1], tgt_word_index=[0, 1, 1])
    np.testing.assert_allclose(merged, [[0.5, 0.5], [0.15, 0.85]])


def test_merge_renormalizes_rows_after_eos_is_dropped() -> None:
    # The EOS column held the rest of each row's mass.
    weights = np.array([[0.4, 0.2, 0.2], [0.0, 0.3, 0.1]])
    merged = merge_to_words(weights, src_word_index=[0, 0, 1], tgt_word_index=[0, 1])
    np.testing.assert_allclose(merged, [[0.75, 0.25], [0.75, 0.25]])


def test_merge_keeps_an_all_zero_row_zero() -> None:
    merged = merge_to_words(np.zeros((1, 2)), src_word_index=[0, 1], tgt_word_index=[0])
    np.testing.assert_array_equal(merged, [[0.0, 0.0]])


@pytest.mark.parametrize(
    ("shape", "src_word_index", "tgt_word_index"),
    [((1, 1), [0, 1], [0]), ((1, 1), [0], [0, 0]), ((1, 2), [0, 2], [0]), ((1, 2), [-1, 0], [0])],
    ids=["too-many-src", "too-many-tgt", "word-without-piece", "negative"],
)
def test_merge_rejects_bad_word_indices(
    shape: tuple[int, int], src_word_index: list[int], tgt_word_index: list[int]
) -> None:
    with pytest.raises(ValueError, match="word_index"):
        merge_to_words(np.ones(shape), src_word_index=src_word_index, tgt_word_index=tgt_word_index)


_PIECES = st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=6)


@st.composite
def _attention(draw: st.DrawFn) -> tuple[np.ndarray, list[int], list[int]]:
    src_index = _word_index(draw(_PIECES))
    tgt_index = _word_index(draw(_PIECES))
    values = draw(
        st.lists(
            st.floats(min_value=0.001, max_value=1.0),
            min_size=len(src_index) * len(tgt_index),
            max_size=len(src_index) * len(tgt_index),
        )
    )
    weights = np.array(values).reshape(len(tgt_index), len(src_index))
    return weights, src_index, tgt_index


@settings(deadline=None, max_examples=60)
@given(_attention())
def test_merged_rows_sum_to_one_with_one_column_per_word(
    case: tuple[np.ndarray, list[int], list[int]],
) -> None:
    weights, src_index, tgt_index = case
    merged = merge_to_words(weights, src_word_index=src_index, tgt_word_index=tgt_index)
    assert merged.shape == (max(tgt_index) + 1, max(src_index) + 1)
    np.testing.assert_allclose(merged.sum(axis=1), 1.0)
    assert (merged >= 0).all()


@settings(deadline=None, max_examples=60)
@given(_attention())
def test_merge_is_row_normalization_when_every_piece_is_a_word(
    case: tuple[np.ndarray, list[int], list[int]],
) -> None:
    weights, _, _ = case
    num_tgt, num_src = weights.shape
    merged = merge_to_words(
        weights, src_word_index=list(range(num_src)), tgt_word_index=list(range(num_tgt))
    )
    np.testing.assert_allclose(merged, weights / weights.sum(axis=1, keepdims=True))


# ---- link extraction and soft records -----------------------------------------------------

_WORD_WEIGHTS = np.array([[0.1, 0.9], [0.7, 0.3], [0.2, 0.8]])  # 3 target x 2 source words


def test_argmax_links_each_target_word_to_its_strongest_source_word() -> None:
    assert argmax_links(_WORD_WEIGHTS) == [(0, 1), (1, 0), (1, 2)]


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        (0.5, [(0, 1), (1, 0), (1, 2)]),
        (0.25, [(0, 1), (1, 0), (1, 1), (1, 2)]),
        (0.95, []),
        (1.0, []),
    ],
)
def test_threshold_links_keep_weights_at_least_threshold(
    threshold: float, expected: list[tuple[int, int]]
) -> None:
    assert threshold_links(_WORD_WEIGHTS, threshold) == expected


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5])
def test_threshold_out_of_range_is_a_config_error(threshold: float) -> None:
    with pytest.raises(ConfigError, match="threshold"):
        threshold_links(_WORD_WEIGHTS, threshold)


def test_argmax_links_of_empty_matrix_is_empty() -> None:
    assert argmax_links(np.zeros((0, 3))) == []
    assert argmax_links(np.zeros((2, 0))) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [("argmax", [(0, 1), (1, 0), (1, 2)]), ("threshold", [(0, 1), (1, 0), (1, 1), (1, 2)])],
)
def test_extraction_methods_are_found_by_name(name: str, expected: list[tuple[int, int]]) -> None:
    assert extractor(name)(_WORD_WEIGHTS, 0.25) == expected


def test_unknown_extraction_method_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'argmax'"):
        extractor("argmx")


def test_soft_record_is_json_ready_and_rounded() -> None:
    weights = np.array([[0.123456, 0.876544]])
    record = soft_record(["ein", "Haus"], ["house"], weights)
    assert json.loads(json.dumps(record)) == {
        "src": ["ein", "Haus"],
        "tgt": ["house"],
        "weights": [[0.1235, 0.8765]],
    }


def test_soft_record_rejects_a_matrix_of_the_wrong_shape() -> None:
    with pytest.raises(ValueError, match="shape"):
        soft_record(["a", "b"], ["c"], np.ones((2, 1)))


# ---- heatmaps ---------------------------------------------------------------------------------


def _words(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(count)]


def _png_width(path: Path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


@pytest.mark.parametrize(
    ("suffix", "magic"),
    [(".png", b"\x89PNG\r\n\x1a\n"), (".svg", b"<?xml"), (".pdf", b"%PDF")],
)
def test_plot_writes_the_format_of_the_suffix_atomically(
    tmp_path: Path, suffix: str, magic: bytes
) -> None:
    path = tmp_path / f"attention{suffix}"
    weights = np.eye(3)[:, ::-1] * 0.8 + 0.05
    plot_heatmap(
        weights,
        src_words=["Ein", "großes", "Haus"],
        tgt_words=["a", "big", "house"],
        path=path,
        title="(a) example",
    )
    data = path.read_bytes()
    assert data.startswith(magic) and len(data) > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    if suffix == ".svg":
        assert b"<svg" in data and b"house" in data


def test_plot_grows_with_the_number_of_words(tmp_path: Path) -> None:
    widths = []
    for count in (3, 30):
        path = tmp_path / f"{count}.png"
        weights = np.full((count, count), 1.0 / count)
        plot_heatmap(weights, src_words=_words("s", count), tgt_words=_words("t", count), path=path)
        widths.append(_png_width(path))
    assert widths[1] > 3 * widths[0]


@pytest.mark.parametrize("name", ["a.jpeg", "a", "a.txt"])
def test_plot_to_an_unknown_suffix_is_a_config_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match=r"\.png, \.svg or \.pdf"):
        plot_heatmap(np.ones((1, 1)), src_words=["a"], tgt_words=["b"], path=tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_plot_without_matplotlib_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError) as caught:
        plot_heatmap(np.ones((1, 1)), src_words=["a"], tgt_words=["b"], path=tmp_path / "a.png")
    assert str(caught.value) == "matplotlib is needed for --plot (pip install nmtkit[plot])"


def test_plot_rejects_an_empty_sentence(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        plot_heatmap(np.ones((0, 2)), src_words=["a", "b"], tgt_words=[], path=tmp_path / "a.png")
