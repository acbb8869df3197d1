"""The ``remd reembed`` command: move the database to another embedding model
(:func:`remd.reembed`); registered on the group by :mod:`remd.cli.main`."""

from __future__ import annotations

import sys
from typing import Any

import click

from remd.cli.context import Ctx, echo_json, pass_ctx
from remd.reembedding import reembed as move


@click.command()
@click.option("--provider", type=click.Choice(["minilm", "openai"]), default=None,
              help="Embedder to move to (default: the config's [embed] provider).")
@click.option("--model", default=None,
              help="The endpoint's model (openai; default: [embed] model).")
@click.option("--dimensions", type=click.IntRange(1, 16384), default=None,
              help="Vector size to ask the endpoint for (openai; default: [embed] dimensions, "
                   "else the model's own).")
@click.option("--background", is_flag=True,
              help="Only begin the move: the daemon's ticks (or the next reembed) embed the rest.")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def reembed(c: Ctx, provider: str | None, model: str | None, dimensions: int | None,
            background: bool, as_json: bool) -> None:
    """Move every memory of the database to another embedding model.

    The new model is recorded, every vector is dropped and every memory re-embedded in
    batches; inject finds the ones not yet done by their words and tags. Killed, it goes on
    where it stopped when run again. Configure [embed] the same way afterwards: the database
    refuses another model.
    """
    changes: dict[str, Any] = {k: v for k, v in (("provider", provider), ("model", model),
                                                 ("dimensions", dimensions)) if v is not None}
    config = c.config
    if changes:
        embed = type(config.embed).model_validate(config.embed.model_dump() | changes)
        config = config.model_copy(update={"embed": embed})
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if not sys.stderr.isatty():
            return
        if bar is None:
            bar = click.progressbar(length=total, label="re-embedding", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        result = move(c.db, config, background=background, progress=progress)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        echo_json(result.to_dict())
        return
    before = "nothing recorded" if result.before is None else str(result.before)
    click.echo(f"{before} -> {result.after}: {result.embedded} memories embedded in "
               f"{result.seconds:.1f} s, {result.remaining} waiting"
               + (" (for the daemon or the next reembed)" if result.remaining else ""))
