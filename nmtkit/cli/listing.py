"""`nmtkit list`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from nmtkit.cli.app import UserDirs, app, setup, user_errors


@app.command("list")
@user_errors
def list_components(
    kind: Annotated[
        str | None,
        typer.Argument(help="encoder, attention, decoder or search \\[default: every kind]."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    user_dir: UserDirs = None,
) -> None:
    """List the registered components (plugins included), their options and defaults."""
    from nmtkit.catalog import catalog, catalog_json

    setup(user_dirs=user_dir)
    items = catalog(kind)
    if as_json:
        typer.echo(catalog_json(items))
        return
    table = Table(title="nmtkit components", show_lines=True)
    for column in ("kind", "name", "description", "options (default)", "provider"):
        table.add_column(column, overflow="fold")
    for item in items:
        options = "\n".join(f"{o.name}: {o.type} = {o.default!r}" for o in item.options)
        table.add_row(item.kind, item.name, item.description, options or "-", item.provider)
    Console().print(table)  # stdout: the listing is the command's output
