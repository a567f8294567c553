"""The ``nmtkit`` command: one module per subcommand, each a thin shell over the library."""

from nmtkit.cli import (  # noqa: F401  (each module registers its subcommand)
    align,
    average,
    download,
    listing,
    preprocess,
    score,
    score_pairs,
    serve,
    shortlist,
    train,
    translate,
)
from nmtkit.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="nmtkit")
