"""`nmtkit translate`."""

from __future__ import annotations

from typing import Annotated

import typer

from nmtkit.cli.app import (
    LENGTHS,
    MODEL,
    Device,
    ModelsOpt,
    Output,
    Precision,
    Quiet,
    Threads,
    UserDirs,
    Verbose,
    app,
    model_batch_size_option,
    output_cap_option,
    setup,
    user_errors,
)
from nmtkit.cli.defaults import default, default_tag

BEAM = "search/beam.py:BeamSearch.Config"
SAMPLING = "search/sampling.py:SamplingSearch.Config"
_WORKERS = default_tag("search/side_by_side.py", "DEFAULT_WORKERS", note=", 1 with one thread")
_EARLY_STOP = "--early-stop" if default(BEAM, "early_stopping") else "--no-early-stop"


@app.command()
@user_errors
def translate(
    model: ModelsOpt,
    input: Annotated[
        str, typer.Option("--input", "-i", help="Input file ('-' for stdin; .gz read).")
    ] = "-",
    output: Output = "-",
    beam: Annotated[
        int | None,
        typer.Option(
            help="Beam size; 1 (with no other beam option) or --greedy for greedy search "
            f"{default_tag(BEAM, 'beam_size', of=MODEL)}."
        ),
    ] = None,
    greedy: Annotated[bool, typer.Option(help="Greedy search instead of beam search.")] = False,
    length_penalty: Annotated[
        float | None,
        typer.Option(
            help="Beam: alpha of GNMT's length penalty, log p / ((5+|y|)/6)^alpha; 0: raw log p "
            f"{default_tag(BEAM, 'length_penalty', of=MODEL)}."
        ),
    ] = None,
    coverage_penalty: Annotated[
        float | None,
        typer.Option(
            help="Beam: beta of GNMT's coverage penalty, beta * sum_j log(min(attention paid "
            "to source word j, 1)); 0: off "
            f"{default_tag(BEAM, 'coverage_penalty', of=MODEL)}."
        ),
    ] = None,
    early_stop: Annotated[
        bool | None,
        typer.Option(
            "--early-stop/--no-early-stop",
            help="Beam: stop a sentence at beam-size finished hypotheses, or go on while a "
            f"live one could still beat them \\[default: the model's, {_EARLY_STOP}].",
        ),
    ] = None,
    sampling: Annotated[
        bool,
        typer.Option(help="Sample translations instead of searching; --nbest N draws N samples."),
    ] = False,
    temperature: Annotated[
        float | None,
        typer.Option(
            help="Sampling: divide log p by this; below 1 sharpens "
            f"{default_tag(SAMPLING, 'temperature')}."
        ),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option(
            help="Sampling: only the k most probable words; 0: all "
            f"{default_tag(SAMPLING, 'top_k')}."
        ),
    ] = None,
    top_p: Annotated[
        float | None,
        typer.Option(
            help="Sampling: only the fewest most probable words of mass p (nucleus); 1: all "
            f"{default_tag(SAMPLING, 'top_p')}."
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Sampling: seed; each sentence's samples depend only on it and the sentence "
            f"{default_tag(SAMPLING, 'seed')}."
        ),
    ] = None,
    prefix: Annotated[
        str | None,
        typer.Option(
            help="File of target prefixes, one per input line (empty line: none); each "
            "translation starts with its prefix."
        ),
    ] = None,
    constraints: Annotated[
        str | None,
        typer.Option(
            help="File of target phrases every translation must contain, one line per input "
            "line, the phrases tab-separated (empty line: none); beam search only."
        ),
    ] = None,
    terminology: Annotated[
        str | None,
        typer.Option(
            help="Glossary TSV, 'source term<TAB>target term' a line: every line whose source "
            "holds a source term (whole words, any case) must use its target term; beam "
            "search only."
        ),
    ] = None,
    term_placement: Annotated[
        str | None,
        typer.Option(
            help="How a glossary term is placed: gate (force it in only where the attention "
            "is on its source term), bonus (prefer hypotheses that started it there) or none "
            f"{default_tag(BEAM, 'term_placement', of=MODEL)}."
        ),
    ] = None,
    batch_size: Annotated[int | None, model_batch_size_option()] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            help="Most padded source pieces per batch, sentences x (longest + 1); a longer "
            f"sentence is translated alone {default_tag(LENGTHS, 'max_tokens')}."
        ),
    ] = None,
    max_source_len: Annotated[
        int | None,
        typer.Option(
            help="Most source pieces read of a line; a longer one is cut to it, with a "
            "warning naming the line; 0: no cap "
            f"{default_tag(LENGTHS, 'max_source_len', note=', whole lines')}."
        ),
    ] = None,
    max_len_a: Annotated[float | None, output_cap_option("a")] = None,
    max_len_b: Annotated[int | None, output_cap_option("b")] = None,
    nbest: Annotated[
        int,
        typer.Option(
            help="Hypotheses per sentence (with --output-format nbest or jsonl); with "
            "--sampling, samples per sentence."
        ),
    ] = 1,
    output_format: Annotated[
        str,
        typer.Option(
            help="text, nbest (i ||| hypothesis ||| score) or jsonl (scores and alignments)."
        ),
    ] = "text",
    split_sentences: Annotated[
        bool,
        typer.Option(
            help="Split each line into sentences with sentencex for the source language, "
            "translate them as one batch and join the translations; whitespace and line count "
            "kept; jsonl shows each part. Not with --prefix or --nbest above 1."
        ),
    ] = False,
    shortlist: Annotated[
        bool,
        typer.Option(
            help="Search each sentence only over the target pieces its source pieces can "
            "produce, from the model directory's shortlist.npz (written by nmtkit train, or "
            "nmtkit shortlist); a sentence with a piece it lacks gets the whole vocabulary. "
            "Scores are then normalized over those pieces."
        ),
    ] = False,
    chunk_size: Annotated[
        int | None,
        typer.Option(
            help="Most lines translated together; from a pipe or a terminal, fewer when the "
            "input pauses (--flush-ms) \\[default: 1000]."
        ),
    ] = None,
    flush_ms: Annotated[
        float | None,
        typer.Option(
            help="From a pipe or a terminal: translate the lines that have come once no new "
            "line has come for this many milliseconds (0: none awaited); a file is read in "
            f"full chunks {default_tag('translation/streaming.py', 'DEFAULT_FLUSH_MS')}."
        ),
    ] = None,
    device: Device = "cpu",
    threads: Threads = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Batches searched side by side, each by its own thread with its share of "
            "--threads (as Marian's --cpu-threads); the translations are the same for any "
            f"number {_WORKERS}.",
        ),
    ] = None,
    precision: Precision = None,
    verbose: Verbose = 0,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Translate raw text, one sentence a line, streaming from stdin to stdout."""
    from nmtkit.search.length_policy import LengthPolicy
    from nmtkit.search.overrides import SearchOverrides
    from nmtkit.terminology.glossary import read_glossary
    from nmtkit.translation.formats import check_output, open_translation_writer
    from nmtkit.translation.loading import open_translator
    from nmtkit.translation.options import check_options
    from nmtkit.translation.splitting import check_splitting

    setup(verbose=verbose, quiet=quiet, user_dirs=user_dir)
    check_output(output, output_format)  # before the model loads and any input is read
    check_options(chunk_size=chunk_size, flush_ms=flush_ms)
    check_splitting(split_sentences=split_sentences, nbest=nbest, prefix_path=prefix)
    lengths = LengthPolicy.of(max_source_len=max_source_len, max_tokens=max_tokens)
    glossary = () if terminology is None else read_glossary(terminology)
    translator = open_translator(
        model,
        search=SearchOverrides(
            beam=beam,
            greedy=greedy,
            length_penalty=length_penalty,
            coverage_penalty=coverage_penalty,
            early_stopping=early_stop,
            term_placement=term_placement,
            sampling=sampling,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
        ),
        batch_size=batch_size,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        nbest=nbest,
        with_alignment=output_format == "jsonl",
        device=device,
        threads=threads,
        precision=precision,
        lengths=lengths,
        split_sentences=split_sentences,
        shortlist=shortlist,
        terminology=glossary,
        workers=workers,
    )
    with open_translation_writer(output, output_format) as write:
        for item in translator.translate_stream(
            input,
            chunk_size=chunk_size,
            flush_ms=flush_ms,
            prefix_path=prefix,
            constraints_path=constraints,
        ):
            write(item)
