"""The REM commands of ``remd``: ``triggers``, ``run-rem`` and ``rollback`` (remd.sleep.triggers,
remd.sleep.rem, remd.sleep.rollback), registered on the group by :mod:`remd.cli.main`."""

from __future__ import annotations

import sys
from typing import Any

import click

from remd.cli.context import Ctx, echo_json, iso_fields, pass_ctx
from remd.errors import RemdError


@click.command()
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def triggers(c: Ctx, as_json: bool) -> None:
    """Evaluate the REM triggers of the namespace and explain each one."""
    with c.memory(embedder=None) as m:
        report = m.triggers()
    if as_json:
        echo_json(iso_fields(report.to_dict(), "now"))
        return
    for check in report.checks:
        mark = "FIRES" if check.fired else "ok"
        click.echo(f"{check.reason.value:<18} {mark:<5}  {check.explanation}")
    click.echo("REM should run" if report.should_run else "no trigger fired")


class _RemBar:
    """REM progress callback: a click progress bar on stderr once the cluster count is known."""

    def __init__(self) -> None:
        self.bar: Any = None

    def __call__(self, event: Any) -> None:
        if not sys.stderr.isatty():
            return
        if self.bar is None and event.total:
            self.bar = click.progressbar(length=event.total, label="clusters", file=sys.stderr)
            self.bar.__enter__()
        if self.bar is not None and event.done:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _as_of(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from remd.wire import parse_time

    try:
        return parse_time(value, "--as-of", float("inf"))
    except RemdError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("run-rem")
@click.option("--dry-run", is_flag=True,
              help="Print what a run would do (the same checks, the synthesiser asked); "
                   "change nothing.")
@click.option("--as-of", "as_of", default=None, callback=_as_of, metavar="DATE",
              help="With --dry-run: preview the run as of this date (ISO 8601, e.g. "
                   "2026-12-31).")
@click.option("--include-held", is_flag=True,
              help="Also flag the memories a rollback holds back (rem.hold_days).")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def run_rem_cmd(c: Ctx, dry_run: bool, as_of: float | None, include_held: bool,
                as_json: bool) -> None:
    """Run one REM consolidation cycle on the namespace."""
    if as_of is not None and not dry_run:
        raise click.UsageError("--as-of previews a run: give it with --dry-run")
    bar = _RemBar()
    try:
        with c.memory() as m:
            run = m.run_rem(now=as_of, dry_run=dry_run, include_held=include_held,
                            progress=bar)
    finally:
        bar.close()
    if as_json:  # a plan field only for --dry-run; times as export writes them
        run_dict = {k: v for k, v in run.to_dict().items() if k != "plan" or run.dry_run}
        echo_json(iso_fields(run_dict, "started_at", "finished_at"))
        return
    head = "plan (dry run)" if run.dry_run else f"run {run.run_id}: {run.status.value}"
    click.echo(f"{head}: {run.flagged} flagged, {run.clusters} clusters, "
               f"{run.synthesised} synthesised, {run.skipped} skipped, "
               f"live {run.live_before} -> {run.live_after}"
               + (f" ({run.held} held since a rollback: --include-held to flag them)"
                  if run.held else ""))
    if run.why_none:
        click.echo(run.why_none)
    for cluster in run.plan:
        click.echo(f"cluster {cluster.cluster_no} ({len(cluster.members)} memories, "
                   f"coherence {cluster.coherence:.2f}): "
                   + (f"would fold {cluster.folded}" if cluster.status == "committed"
                      else f"unverified: {cluster.reason}" if cluster.status == "unverified"
                      else f"would skip: {cluster.reason}"))
        for member in cluster.members:
            click.echo(f"  {member.id}  {member.preview}")
    skipped = [o for o in run.outcomes if o["status"] == "skipped"] if not run.dry_run else []
    for outcome in skipped:
        click.echo(f"cluster {outcome['cluster_no']} skipped: {outcome['reason']}")


@click.command()
@click.argument("run_id")
@pass_ctx
def rollback(c: Ctx, run_id: str) -> None:
    """Undo a REM run: members live again, edges back, synthesis nodes removed."""
    with c.memory(embedder=None) as m:
        result = m.rollback(run_id)
    click.echo(f"rolled back {result.run_id}: {result.members_restored} memories restored, "
               f"{result.synthesis_removed} synthesis nodes removed, "
               f"{result.edges_restored} edges restored, {result.held} memories held")
