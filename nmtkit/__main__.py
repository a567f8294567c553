"""``python -m nmtkit``: the same as the ``nmtkit`` command."""

from nmtkit.cli import main

main()
