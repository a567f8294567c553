"""`nmtkit serve`."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from nmtkit.cli.app import (
    LENGTHS,
    Device,
    ModelsOpt,
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
from nmtkit.cli.defaults import default_tag

LIMITS = "serving/limits.py:ServeLimits"


@app.command()
@user_errors
def serve(
    model: ModelsOpt,
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 for any free one (logged).")] = 8080,
    max_sentences: Annotated[
        int | None,
        typer.Option(
            help=f"Most sentences per request (more: 413) {default_tag(LIMITS, 'max_sentences')}."
        ),
    ] = None,
    max_chars: Annotated[
        int | None,
        typer.Option(
            help=f"Most characters per sentence (more: 413) {default_tag(LIMITS, 'max_chars')}."
        ),
    ] = None,
    max_queue: Annotated[
        int | None,
        typer.Option(
            help="Most sentences accepted and not yet answered; a request over it gets 429 "
            f"{default_tag(LIMITS, 'max_queue')}."
        ),
    ] = None,
    max_beam: Annotated[
        int | None,
        typer.Option(
            help="Most hypotheses per sentence a request may ask for, beam size or samples "
            f"(more: 422) {default_tag(LIMITS, 'max_beam')}."
        ),
    ] = None,
    batch_wait_ms: Annotated[
        float | None,
        typer.Option(
            help="How long the oldest waiting request waits for others to share its batch "
            f"{default_tag(LIMITS, 'batch_wait_ms')}."
        ),
    ] = None,
    max_batch_sentences: Annotated[
        int | None,
        typer.Option(
            help="Most sentences decoded as one batch "
            f"{default_tag(LIMITS, 'max_batch_sentences')}."
        ),
    ] = None,
    batch_size: Annotated[int | None, model_batch_size_option("search batch")] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            help="Most padded source pieces per search batch; a longer sentence is searched "
            f"alone {default_tag(LENGTHS, 'max_tokens')}."
        ),
    ] = None,
    max_source_len: Annotated[
        int | None,
        typer.Option(
            help="Most source pieces read of a sentence; 0: no cap "
            f"{default_tag(LENGTHS, 'max_source_len')}."
        ),
    ] = None,
    max_len_a: Annotated[float | None, output_cap_option("a")] = None,
    max_len_b: Annotated[int | None, output_cap_option("b")] = None,
    shortlist: Annotated[
        bool,
        typer.Option(
            help="Search over each sentence's vocabulary shortlist (translate --shortlist)."
        ),
    ] = False,
    terminology: Annotated[
        str | None,
        typer.Option(
            help="Glossary TSV every request follows unless it gives its own "
            "(translate --terminology)."
        ),
    ] = None,
    page: Annotated[
        bool,
        typer.Option(
            help="Serve the translation page at / (a text box, translations and attention "
            "heatmaps); --no-page for the API alone."
        ),
    ] = True,
    device: Device = "cpu",
    threads: Threads = None,
    precision: Precision = None,
    verbose: Verbose = 0,
    quiet: Quiet = False,
    user_dir: UserDirs = None,
) -> None:
    """Serve translations over HTTP: POST /translate, GET /health, GET /model (docs at /docs),
    and a page at / that shows translations and their attention."""
    from nmtkit.search.length_policy import LengthPolicy
    from nmtkit.serving.limits import ServeLimits
    from nmtkit.serving.listener import check_installed, listen
    from nmtkit.terminology.glossary import read_glossary
    from nmtkit.translation.loading import open_translator

    setup(verbose=verbose, quiet=quiet, user_dirs=user_dir)
    _log_server_through_nmtkit(verbose=verbose)
    limits = ServeLimits.of(
        max_sentences=max_sentences,
        max_chars=max_chars,
        max_queue=max_queue,
        max_beam=max_beam,
        batch_wait_ms=batch_wait_ms,
        max_batch_sentences=max_batch_sentences,
    )
    lengths = LengthPolicy.of(max_source_len=max_source_len, max_tokens=max_tokens)
    glossary = () if terminology is None else read_glossary(terminology)
    check_installed()
    with listen(host, port) as listener:  # before the model loads: a busy port fails at once
        translator = open_translator(
            model,
            batch_size=batch_size,
            max_len_a=max_len_a,
            max_len_b=max_len_b,
            device=device,
            threads=threads,
            precision=precision,
            lengths=lengths,
            shortlist=shortlist,
            terminology=glossary,
        )
        from nmtkit.serving.server import serve as run_server

        run_server(translator, listener, limits=limits, access_log=verbose > 0, page=page)


def _log_server_through_nmtkit(*, verbose: int) -> None:
    """uvicorn's warnings and errors (with -v also its start, stop and access lines) go to
    nmtkit's log handler."""
    server_log = logging.getLogger("uvicorn")
    server_log.handlers[:] = logging.getLogger("nmtkit").handlers
    server_log.setLevel(logging.INFO if verbose else logging.WARNING)
    server_log.propagate = False
