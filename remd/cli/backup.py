"""The ``remd backup`` command: an online copy of the database file (:func:`remd.backup_file`),
or the check of one (:func:`remd.check_backup`); registered on the group by
:mod:`remd.cli.main`."""

from __future__ import annotations

import click

from remd import Copy, backup_file, check_backup
from remd.cli.context import Ctx, echo_json, pass_ctx


@click.command()
@click.argument("dest", type=click.Path(readable=False))  # a directory: exit 1, one line
@click.option("--check", "check", is_flag=True,
              help="Verify the copy DEST (integrity, remd schema, memories) instead of making one.")
@click.option("--force", is_flag=True, help="Replace DEST if it exists.")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def backup(c: Ctx, dest: str, check: bool, force: bool, as_json: bool) -> None:
    """Copy the database to DEST while agents and the daemon keep writing it."""
    if check and force:
        raise click.UsageError("--check reads DEST; --force is for making a copy")
    if check:
        checked = check_backup(dest)
        if as_json:
            echo_json(checked.to_dict())
            return
        click.echo(f"{dest}: ok, schema version {checked.schema_version}"
                   + ("" if checked.current else " (older: remd migrates it when it opens it)"))
        _print_namespaces(checked)
        return
    report = backup_file(c.db, dest, c.config.store, force=force)
    if as_json:
        echo_json(report.to_dict())  # a file's path: PostgreSQL is refused with a hint
        return
    click.echo(f"{report.source} -> {dest}: {report.pages} pages "
               f"({report.bytes / 1e6:.1f} MB) in {report.seconds:.2f} s, "
               f"schema version {report.schema_version}")
    _print_namespaces(report)


def _print_namespaces(copy: Copy) -> None:
    for name, count in copy.namespaces.items():
        click.echo(f"{name}: {count.live} live / {count.total} memories")
