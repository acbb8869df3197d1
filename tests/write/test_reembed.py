"""Embeddings of any size, recorded: a file made with a 768-dimension embedder (the loopback
OpenAI-compatible server) works end to end on both backends (save, inject, REM,
export/import, backup); opening it with the 384-dimension default is a ConfigError naming
both; ``remd reembed`` moves it to MiniLM and back with every memory findable, and a move
killed halfway is resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remd import Config, ConfigError, Memory, backup_file, reembed
from remd.cli.main import main
from remd.config import EmbedConfig
from remd.index import vectormodel
from tests.llm_server import LLMServer
from tests.sleep.test_rem import NOW

pytestmark = pytest.mark.backends

DAY = 86_400.0
# Two recurring incidents (REM's kind of cluster) and notes about other things.
NOTES = [
    *(f"The staging VPN dropped during the {d} deploy and came back after ten minutes"
      for d in ("Monday", "Tuesday", "Wednesday", "Thursday")),
    *(f"Printer on floor three jammed again with the {c} paper tray"
      for c in ("top", "bottom", "side", "manual")),
    "Nadia prefers her coffee black with no sugar",
    "The quarterly budget review moved to the second week of March",
    "Our cat Miso is allergic to chicken-based food",
    "Ravi's flight to Lisbon lands at 14:05 on Friday",
    "The wifi password for the cabin is written on the fridge",
    "Backups of the photo library run every Sunday night",
]


def _config(server: LLMServer, dimensions: int | None = 768, **embed: Any) -> Config:
    return Config(embed=EmbedConfig(provider="openai", base_url=server.base_url,
                                    model="emb-test", dimensions=dimensions, **embed))


def _fill(m: Memory) -> None:
    m.import_lines(json.dumps({"content": text, "created_at": datetime.fromtimestamp(
                               NOW - (60 - i) * DAY, UTC).isoformat()})
                   for i, text in enumerate(NOTES))
    assert m.stats().pending_embeddings == 0


def _widths(m: Memory) -> set[int]:
    return {int(r[0]) for r in m.store.query("SELECT DISTINCT length(vec) FROM node_vec_bit")}


def _all_findable(m: Memory) -> None:
    """Every live memory is the nearest to its own text, and inject finds it by vector."""
    live = [n for n in m.recent(100) if n.status == "live"]
    assert live
    for node in live:
        assert m.nearest(node.content, k=1)[0][0].id == node.id
    pack = m.inject("who is allergic to chicken food?", 200)
    assert pack.items and "Miso" in pack.items[0].content and "vector" in pack.items[0].sources


def test_a_768_dimension_file_end_to_end(db_path: Path, llm_server: LLMServer,
                                         tmp_path: Path) -> None:
    cfg = _config(llm_server)
    with Memory(db_path, config=cfg, clock=lambda: NOW) as m:
        _fill(m)
        one = m.save("The boiler service is booked for 9 October")
        assert vectormodel.recorded(m.store) == vectormodel.Model("openai:emb-test", 768)
        assert _widths(m) == {768}
        _all_findable(m)
        run = m.run_rem(now=NOW)
        assert run.status == "completed" and run.synthesised >= 1
        assert m.stats().pending_embeddings == 0 and _widths(m) == {768}
        _all_findable(m)
        lines = list(m.export_lines())
    assert all(r["dimensions"] == 768 for r in llm_server.embedding_requests)
    # Opening it with the default (MiniLM, 384) is refused, naming both; nothing changed.
    with pytest.raises(ConfigError) as refused:
        Memory(db_path)
    text = str(refused.value)
    assert "openai:emb-test (768 dimensions)" in text and "all-MiniLM-L6-v2-int8 (384" in text
    assert "remd reembed" in text
    with pytest.raises(ConfigError, match="1024 dimensions"):
        Memory(db_path, config=_config(llm_server, 1024))
    # A command that does not embed opens it with any config.
    with Memory(db_path, embedder=None) as m:
        assert m.get(one.id).content.startswith("The boiler")
    # Export, and import into a new database with the same embedder.
    other = tmp_path / "imported.db"
    with Memory(other, config=cfg) as m:
        m.import_lines(lines)
        assert _widths(m) == {768}
        assert m.nearest("The boiler service is booked for 9 October", k=1)[0][0].content \
            .startswith("The boiler")
    if isinstance(db_path, Path):  # an online backup (SQLite) keeps the record
        copy = tmp_path / "copy.db"
        backup_file(db_path, copy)
        with Memory(copy, config=cfg) as m:
            _all_findable(m)
        with pytest.raises(ConfigError):
            Memory(copy)


def test_reembed_to_minilm_and_back(db_path: Path, llm_server: LLMServer) -> None:
    cfg = _config(llm_server)
    with Memory(db_path, config=cfg, clock=lambda: NOW) as m:
        _fill(m)
    code, out = _cli(db_path, "reembed", "--provider", "minilm", "--json")
    assert code == 0, out
    moved = json.loads(out)
    assert moved["from"] == {"name": "openai:emb-test", "dim": 768}
    assert moved["to"] == {"name": "all-MiniLM-L6-v2-int8", "dim": 384}
    assert moved["began"] and moved["embedded"] == len(NOTES) and moved["remaining"] == 0
    with Memory(db_path, clock=lambda: NOW) as m:
        assert _widths(m) == {384}
        _all_findable(m)
    with pytest.raises(ConfigError):
        Memory(db_path, config=cfg)
    # Asked again: nothing to do.
    again = reembed(db_path)
    assert not again.began and again.embedded == 0 and again.remaining == 0
    back = reembed(db_path, cfg)
    assert back.began and back.embedded == len(NOTES) and back.after.dim == 768
    with Memory(db_path, config=cfg, clock=lambda: NOW) as m:
        assert _widths(m) == {768}
        _all_findable(m)


def test_no_dimensions_sent_unless_configured(db_path: Path, llm_server: LLMServer) -> None:
    cfg = _config(llm_server, None)
    with Memory(db_path, config=cfg) as m:
        m.save("a memory whose vector is the model's own size")
        assert vectormodel.recorded(m.store) == vectormodel.Model("openai:emb-test", 1536)
        assert _widths(m) == {1536}
        assert m.nearest("a memory whose vector is the model's own size", k=1)
    assert all("dimensions" not in r for r in llm_server.embedding_requests)
    # The endpoint now answers another size: refused, the memory kept in the backlog.
    llm_server.embedding_dim = 1024
    with Memory(db_path, config=cfg) as m:
        node = m.save("saved though the endpoint changed its size")
        assert m.get(node.id).content.startswith("saved though")
        assert m.stats().pending_embeddings == 1 and _widths(m) == {1536}


def test_a_file_from_before_the_record_keeps_its_size(db_path: Path,
                                                      llm_server: LLMServer) -> None:
    """A file written before embedders were recorded (every one was 384 wide): an endpoint
    whose vectors are another size is refused at its first write, not mixed in."""
    with Memory(db_path, config=_config(llm_server, 384)) as m:
        m.save("written when remd asked every endpoint for 384 dimensions")
    with Memory(db_path, embedder=None) as m, m.store.transaction() as conn:
        conn.execute("DELETE FROM remd_meta WHERE key = 'embedder'")  # as such a file has none
    with Memory(db_path, config=_config(llm_server, None)) as m:  # the model's own: 1,536
        node = m.save("saved after the upgrade")
        assert m.get(node.id).content == "saved after the upgrade"
        assert m.stats().pending_embeddings == 1 and _widths(m) == {384}
        assert vectormodel.recorded(m.store) is None
    with Memory(db_path, config=_config(llm_server, 384)) as m:  # configured as it was made
        assert m.embed_pending() == 1
        assert vectormodel.recorded(m.store) == vectormodel.Model("openai:emb-test", 384)


def test_a_bad_embedding_answer_keeps_the_memory(db_path: Path, llm_server: LLMServer) -> None:
    llm_server.embedding_answer = lambda rows: [rows[0][:10], *rows[1:]]  # a ragged answer
    with Memory(db_path, config=_config(llm_server)) as m:
        node = m.save("kept whatever the endpoint answers")
        assert m.get(node.id).content == "kept whatever the endpoint answers"
        assert m.stats().pending_embeddings == 1
        assert m.inject("what is kept whatever the endpoint answers?", 100).items
        llm_server.embedding_answer = None
        assert m.embed_pending() == 1 and _widths(m) == {768}


def test_an_engine_of_the_old_model_never_mixes(db_path: Path, llm_server: LLMServer) -> None:
    """A process still on the old embedder while the file moves: its vectors are refused
    (its memories wait for the new one), its inject keeps answering by words and tags."""
    with Memory(db_path, clock=lambda: NOW) as old:
        _fill(old)
        began = reembed(db_path, _config(llm_server), background=True)
        assert began.began and began.embedded == 0 and began.remaining == len(NOTES)
        late = old.save("Nadia switched to oat milk flat whites in June")
        assert old.stats().pending_embeddings == len(NOTES) + 1
        assert _widths(old) == set()
        pack = old.inject("how does Nadia take her coffee?", 200)
        assert pack.items and any("Nadia" in i.content for i in pack.items)
    done = reembed(db_path, _config(llm_server))
    assert not done.began and done.embedded == len(NOTES) + 1 and done.remaining == 0
    with Memory(db_path, config=_config(llm_server)) as m:
        assert _widths(m) == {768}
        assert m.nearest(late.content, k=1)[0][0].id == late.id


@pytest.mark.soak
@pytest.mark.sqlite_only("kills a CLI process; the PostgreSQL arm moves in process above")
def test_a_move_killed_halfway_resumes(db_path: Path, llm_server: LLMServer,
                                       tmp_path: Path) -> None:
    with Memory(db_path, clock=lambda: NOW) as m:
        _fill(m)
    llm_server.embedding_delay = 0.2
    config = tmp_path / "remd.toml"
    config.write_text(f'[embed]\nprovider = "openai"\nbase_url = "{llm_server.base_url}"\n'
                      f'model = "emb-test"\ndimensions = 768\nbatch_size = 1\n')
    proc = subprocess.Popen(
        [sys.executable, "-c", "from remd.cli.main import main; main()", "--db", str(db_path),
         "--config", str(config), "reembed", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while len(llm_server.embedding_requests) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(llm_server.embedding_requests) >= 4, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with Memory(db_path, embedder=None) as m:
        left = m.stats().pending_embeddings
        assert 0 < left < len(NOTES)
        assert vectormodel.recorded(m.store) == vectormodel.Model("openai:emb-test", 768)
        assert _widths(m) == {768}
        waiting = {n.content for n in m.recent(100)} - {
            str(r[0]) for r in m.store.query("SELECT n.content FROM nodes n JOIN node_vec_bit v "
                                             "ON v.rid = n.rid")}
    llm_server.embedding_delay = 0.0
    # Halfway, inject (with the new model) finds a memory not re-embedded yet by its words.
    cfg = _config(llm_server)
    with Memory(db_path, config=cfg, clock=lambda: NOW) as m:
        for text in sorted(waiting)[:3]:
            pack = m.inject(text, 200)
            assert pack.items and pack.items[0].content == text
    code, out = _cli(db_path, "--config", str(config), "reembed", "--json")
    assert code == 0, out
    resumed = json.loads(out)
    assert not resumed["began"] and resumed["embedded"] == left and resumed["remaining"] == 0
    with Memory(db_path, config=Config.model_validate(
            {"embed": {"provider": "openai", "base_url": llm_server.base_url,
                       "model": "emb-test", "dimensions": 768}}), clock=lambda: NOW) as m:
        assert m.stats().nodes == len(NOTES)
        _all_findable(m)


def test_the_daemon_finishes_a_move_begun_in_the_background(
        db_path: Path, llm_server: LLMServer) -> None:
    from remd.config import DaemonConfig
    from remd.service.daemon import Daemon

    with Memory(db_path, clock=lambda: NOW) as m:
        _fill(m)
    cfg = _config(llm_server).model_copy(update={"daemon": DaemonConfig(backlog_per_tick=5)})
    began = reembed(db_path, cfg, background=True)
    assert began.began and began.remaining == len(NOTES)
    daemon = Daemon(db_path, cfg, env={})
    try:
        ticks = [daemon.tick(NOW + i).embedded for i in range(4)]
    finally:
        daemon.close()
    assert ticks[0] == 5  # a bounded batch a tick (a REM run embeds what it needs itself)
    with Memory(db_path, config=cfg, clock=lambda: NOW) as m:
        assert m.stats().pending_embeddings == 0
        _all_findable(m)


def test_reembed_refuses_no_embedder(db_path: Path) -> None:
    with Memory(db_path) as m:
        m.save("something")
    with pytest.raises(ConfigError, match="needs an embedder"):
        reembed(db_path, Config(embed=EmbedConfig(provider="none")))
    code, out = _cli(db_path, "reembed", "--model", "x", "--provider", "openai")
    assert code == 1 and "base_url" in out


def _cli(db: Path, *args: str) -> tuple[int, str]:
    """``remd --db DB ARGS`` (options of the group first when given), its exit code and
    output (stdout, or the error)."""
    group = [a for a in args[:2] if args[0] == "--config"] if args[0] == "--config" else []
    rest = args[len(group):]
    r = CliRunner().invoke(main, ["--db", str(db), *group, *rest])
    return r.exit_code, r.stdout if r.exit_code == 0 else (r.stdout + r.stderr)
