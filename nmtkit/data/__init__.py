"""Data layer: text pipeline, binarized datasets and the preprocess command's library function."""

from nmtkit.data.datadir import load_manifest, load_pipeline
from nmtkit.data.dataset import TokenDataset, write_dataset
from nmtkit.data.preprocess import (
    PreprocessConfig,
    PreprocessSummary,
    SplitSummary,
    preprocess,
    summary_table,
)
from nmtkit.data.text import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    CleanSettings,
    PairCleaner,
    TextPipeline,
    TextPreparer,
    TextSettings,
    clean_reason,
    train_sentencepiece,
    word_index,
    words,
)

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PAD_ID",
    "UNK_ID",
    "CleanSettings",
    "PairCleaner",
    "PreprocessConfig",
    "PreprocessSummary",
    "SplitSummary",
    "TextPipeline",
    "TextPreparer",
    "TextSettings",
    "TokenDataset",
    "clean_reason",
    "load_manifest",
    "load_pipeline",
    "preprocess",
    "summary_table",
    "train_sentencepiece",
    "word_index",
    "words",
    "write_dataset",
]
