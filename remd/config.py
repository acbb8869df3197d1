"""One frozen, validated configuration object.

Defaults live here and only here. `load_config` reads a TOML file, then ``REMD_*`` environment
variables, then explicit overrides (CLI flags), and validates the result once. The object is
passed explicitly to whatever needs it: there is no module-level instance.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from remd.errors import ConfigError


class LLMSettings(BaseModel):
    """How to reach the LLM. ``base_url=None`` means no LLM is configured (offline synthesis)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    api_key: SecretStr | None = None  # SecretStr: repr, str and logs show "**********"
    model: str = "gpt-4o-mini"
    timeout: float = Field(default=120.0, gt=0, description=(
        "seconds per attempt, whole answer (a 1.5B model on 2 CPU cores took 14-45 s a "
        "synthesis)"))
    max_retries: int = Field(default=3, ge=0, description="attempts after the first one")
    backoff_base: float = Field(default=0.5, ge=0)
    backoff_max: float = Field(default=8.0, ge=0)
    concurrency: int = Field(default=2, ge=1, description="calls in flight at once per client")
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1)

    @pydantic.field_validator("base_url", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        # REMD_LLM__BASE_URL="" in an environment file means "no LLM", not a relative URL.
        if isinstance(value, str) and not value.strip():
            return None
        return value

class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StoreConfig(_Section):
    busy_timeout_ms: int = Field(5000, ge=0, description="SQLite busy timeout per statement")
    lock_retries: int = Field(5, ge=0, description="extra BEGIN IMMEDIATE attempts after busy")
    max_content_chars: int = Field(65536, ge=1, description="longest memory accepted")
    encoding: str = Field("o200k_base", description="tiktoken encoding for token counts")
    mmap_bytes: int = Field(1 << 30, ge=0, description=(
        "PRAGMA mmap_size: reads map the file instead of copying pages (inject at 100k "
        "memories: 22.7 -> 16.7 ms); 0 turns it off"))
    checkpoint_pages: int = Field(1000, ge=0, description=(
        "WAL pages after which a background thread checkpoints "
        "(remd/store/sqlite/checkpoints.py Checkpointer); "
        "0 leaves it to SQLite, inside the commit that crosses 1000 pages"))
    max_connections: int = Field(4, ge=1, le=64, description=(
        "connections to the file one process keeps at most, shared by every namespace and "
        "thread (each holds ~3 file descriptors and SQLite's page cache)"))
    pool_wait_ms: int = Field(5000, ge=0, description=(
        "how long a caller waits for a free connection before PoolExhausted (busy)"))
    resident_mb: int = Field(0, ge=0, description=(
        "lock up to this many MB of the database file in memory (mlock), so that a question "
        "after idle never waits for the disk: ~2,000 per million memories; 0 leaves paging "
        "to the kernel (remd/store/sqlite/resident.py)"))


class EngineConfig(_Section):
    cache_mb: float = Field(512.0, ge=0, description=(
        "memory the process's in-process caches of one file may hold (tag graph, node "
        "mirror, bit index, per namespace); least recently used namespaces are dropped past "
        "it. A namespace of 1M memories needs ~200 MB; a small one a few KB"))


class EmbedConfig(_Section):
    provider: Literal["minilm", "openai", "none"] = "minilm"
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "text-embedding-3-small"
    dimensions: int | None = Field(None, ge=1, le=16384, description=(
        "vector size asked of an OpenAI-compatible endpoint (unset: the model's own); a file "
        "records its embedder and size: another is refused, `remd reembed` moves it"))
    batch_size: int = Field(64, ge=1, le=2048, description=(
        "texts embedded at once (a bulk save's batch; the most sent in one endpoint request)"))
    timeout: float = Field(30.0, gt=0, le=600, description="seconds one request may take")
    embed_on_save: bool = True  # a single save embeds in its call; bulk saves afterwards
    sentences: int = Field(8, ge=0, le=64, description=(
        "a memory of several sentences also gets a vector per sentence, up to this many: a "
        "question about one sentence of a long memory finds it (0: off)"))


class TagConfig(_Section):
    min_tags: int = Field(3, ge=0)
    max_tags: int = Field(8, ge=1, le=32)
    llm: bool = Field(False, description=(
        "tag new memories with the configured LLM (llm.base_url) after they commit; any "
        "failure keeps the offline tags (the default tagger)"))
    llm_vocabulary: int = Field(100, ge=0, le=1000, description=(
        "the namespace's most used tags shown to the LLM tagger, so it reuses them"))
    llm_timeout: float = Field(30.0, gt=0, le=600, description=(
        "seconds the LLM tagger waits for one answer (a save waits for it; a 1.5B model on a "
        "CPU needs about 10 s for its first, uncached prompt)"))
    llm_cooldown: float = Field(60.0, ge=0, le=86400, description=(
        "after the endpoint fails (down, timeout, HTTP error), saves skip the LLM tagger for "
        "this many seconds instead of each waiting for it"))


class UpdatesConfig(_Section):
    llm: bool = Field(False, description=(
        "after the offline detector, let the configured LLM (llm.base_url) judge whether a new "
        "memory updates its nearest ones, in the background; any failure keeps the offline "
        "decisions"))
    llm_candidates: int = Field(4, ge=1, le=16, description=(
        "nearest live memories the model is shown for each new one"))
    llm_timeout: float = Field(60.0, gt=0, le=600, description=(
        "seconds per answer (in the background: no save waits for it)"))
    llm_cooldown: float = Field(60.0, ge=0, le=86400, description=(
        "after the endpoint fails, the judge rests this long (a warning); memories saved "
        "meanwhile are judged when it ends, the failed one asked once more"))


class InjectConfig(_Section):
    max_seed_tags: int = Field(5, ge=1)
    fanout: int = Field(32, ge=1, description="M: top-weight edges followed per tag")
    depth: int = Field(2, ge=0, description="D: hops from the seed tags")
    decay: float = Field(0.85, gt=0, le=1, description="alpha: activation kept per hop")
    beam: int = Field(128, ge=1, description="B: activated tags kept")
    idf_min_memories: int = Field(0, ge=0, description=(
        "below this many memories every tag counts as specific (0: IDF always applies)"))
    vector_k: int = Field(64, ge=0, description="nearest memories used as hybrid seeds")
    fts_k: int = Field(64, ge=0, description="lexical (FTS5) hits used as hybrid seeds")
    per_tag_cap: int = Field(64, ge=1, description="memories read per activated tag")
    max_candidates: int = Field(256, ge=1, description=(
        "memories the tag walk may propose (vector and lexical hits come on top)"))
    diversity_penalty: float = Field(0.15, ge=0, le=1)
    feedback_eta: float = Field(0.05, gt=0, le=1)
    separator: str = "\n"
    # -- added with inject (issue 3) --
    vector_rerank: int = Field(4, ge=1, description=(
        "R: Hamming candidates per wanted neighbour, reranked by exact cosine"))
    vector_cells_from: int = Field(0, ge=0, description=(
        "from this many vectors a namespace's Hamming pre-filter scans only the cells "
        "(binary k-means partitions) nearest the question, not every vector: ~10x faster at "
        "1M, but it misses some neighbours (remd/index/bitcells.py; 0: off, every vector is "
        "scanned)"))
    vector_cells_probe: int = Field(32768, ge=1, description=(
        "vectors a question scans when cells are on (nearest cells first)"))
    vector_seed_nodes: int = Field(3, ge=0, description=(
        "nearest memories whose tags seed the tag-graph walk"))
    vector_seed_tags: int = Field(5, ge=0, description="seed tags taken from those memories")
    vector_seed_weight: float = Field(0.5, ge=0, le=1, description=(
        "activation of a vector-derived seed tag relative to a query tag"))
    subtype_weight: float = Field(0.9, ge=0, le=1, description=(
        "edge weight of IS_SUBTYPE_OF (parent -> child) in the walk"))
    fts_max_postings: int = Field(2000, ge=1, description=(
        "query words are kept, rarest first, while the memories matching them stay below this"))
    fts_max_terms: int = Field(12, ge=1)
    fusion_k: float = Field(8.0, gt=0, description=(
        "k of the reciprocal-rank fusion: small, so a source's top ranks decide"))
    graph_weight: float = Field(0.5, ge=0, description="weight of tag-graph evidence")
    vector_weight: float = Field(2.0, ge=0, description="weight of vector evidence")
    lexical_weight: float = Field(1.5, ge=0, description="weight of FTS5 bm25 evidence")
    subject_weight: float = Field(1.0, ge=0, description=(
        "weight of subject evidence: the live memories of the attribute a question asks "
        "about (its frame or habit slot, remd.index.keys), whatever their words"))
    subject_k: int = Field(8, ge=0, le=64, description=(
        "newest live memories of a question's subject keys taken as candidates"))
    clause_max: int = Field(3, ge=0, le=64, description=(
        "a synthesis is packed as its subject and at most this many of its clauses, those "
        "that answer the query (0: whole, as saved; remd.query.clauses)"))
    recency_weight: float = Field(0.1, ge=0, le=1, description=(
        "score multiplier is (1 - w) + w * recency: old but relevant memories stay in"))
    recency_half_life_days: float = Field(90.0, gt=0)
    importance_weight: float = Field(0.1, ge=0, le=1, description=(
        "score multiplier is (1 - w) + w * importance"))
    pool: int = Field(256, ge=1, description="best-scored candidates the packer considers")
    expand_per_hop: int = Field(16, ge=1, description=(
        "most activated tags of a hop's frontier whose top-M edges are followed"))
    read_tags: int = Field(32, ge=1, description=(
        "most activated tags whose memories are read (per_tag_cap each at most)"))
    fusion: Literal["rrf", "score", "minmax"] = Field("rrf", description=(
        "rrf: each source adds w * (k+1)/(k+rank); score: w * value / best value"))
    context_weight: float = Field(0.3, ge=0, le=1, description=(
        "share of a candidate's score given to the memories saved just before and after it"))
    context_from: int = Field(32, ge=0, description="best candidates whose neighbours are read")
    context_window: float = Field(3600.0, ge=0, description=(
        "seconds: neighbours saved further apart than this are not context"))
    query_cache: int = Field(256, ge=0, description=(
        "query embeddings a Memory keeps (LRU, ~1.5 KB each): a repeated query skips the "
        "model; 0: off"))
    date_weight: float = Field(2.0, ge=0, description=(
        "a memory saved on a date the query names scores 1 + w times more (0: off)"))
    date_pad_days: float = Field(3.0, ge=0, description=(
        "days either side of a named date that still count (saved the day after, ...)"))
    floor_similarity: float = Field(0.3, ge=0, le=1, description=(
        "relevance floor: with no candidate at least this similar to the query (cosine), fewer "
        "than half of its words or tags found, and no live fact of the key it asks for, the "
        "pack is empty (0: off)"))
    floor_weak: float = Field(0.46, ge=0, le=1, description=(
        "relevance floor: when no packed memory is at least this similar to the query "
        "(cosine), only the best one is kept, with at most one more as like the query (within "
        "0.03): a question about nothing much stored gets one or two memories, not a pack of "
        "near misses (0: off)"))
    floor_spread: float = Field(0.1, ge=0, le=1, description=(
        "relevance floor: an item must score at least the weakest score of the filled pack "
        "plus this share of the way to the best (0: off)"))
    floor_gap: float = Field(0.53, ge=0, le=1, description=(
        "relevance floor: the pack stops before the first score below this share of the "
        "score above it (0: off)"))
    speaker_weight: float = Field(1.0, ge=0, description=(
        "a chat turn ('[date] Name: text') said by someone the query names scores 1 + w "
        "times more (0: off)"))
    fact_weight: float = Field(1.0, ge=0, description=(
        "the live memory of the fact key a question asks for scores the best candidate's "
        "times 1 + w (0: off)"))
    chatter_weight: float = Field(0.5, ge=0, le=1, description=(
        "a memory's score is multiplied by (1 - w) + w * how specific its tags are "
        "(remd.query.chatter): notes that say little rank below ones that say something (0: off)"))
    graph_cache_tags: int = Field(8192, ge=0, description=(
        "tags whose top edges and top memories a process keeps between injects (exact: "
        "evicted as writes change them); 0: off"))


class ImportanceConfig(_Section):
    recency_weight: float = Field(0.25, ge=0, le=1)
    access_weight: float = Field(0.20, ge=0, le=1)
    centrality_weight: float = Field(0.35, ge=0, le=1)
    confidence_weight: float = Field(0.20, ge=0, le=1)
    recency_lambda: float = Field(0.02, ge=0, description="per day")
    access_window_days: float = Field(30.0, gt=0)
    low_confidence: float = Field(0.25, ge=0, le=1, description="flagged whatever else")
    # "median": centrality is a node's degree in excess of the namespace's median degree
    # (log-scaled, 0 at or below the median, 1 at the maximum), so a graph where every node has
    # a similar degree has no "central" node; "zero" is plain degree / max degree.
    centrality_baseline: Literal["median", "zero"] = "median"

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> ImportanceConfig:
        total = (
            self.recency_weight + self.access_weight + self.centrality_weight
            + self.confidence_weight
        )
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"importance weights must sum to 1, they sum to {total:.4f}")
        return self


class TriggerConfig(_Section):
    max_live_nodes: int = Field(300, ge=1)
    min_retrieval_importance: float = Field(0.45, ge=0, le=1)
    retrieval_window_packs: int = Field(50, ge=1)
    idle_hours: float = Field(4.0, gt=0)
    max_contradiction_ratio: float = Field(0.08, ge=0, le=1)
    disabled: tuple[Literal["node_count", "retrieval_quality", "idle", "contradictions"], ...] = ()


class RemConfig(_Section):
    tau: float = Field(0.3, ge=0, le=1, description="importance below which nodes are flagged")
    offline_density: float = Field(1.0, gt=0, le=1, description=(
        "offline synthesiser: share of the members' length a synthesis may keep (the most "
        "informative sentences first); 1.0 keeps every sentence"))
    theta: float = Field(0.78, ge=-1, le=1, description="cosine similarity that links nodes")
    k: int = Field(8, ge=1, description="nearest neighbours examined per flagged node")
    max_cluster_size: int = Field(12, ge=2)
    min_age_days: float = Field(1.0, ge=0, description="fresher memories are never flagged")
    coherence_min: float = Field(0.35, ge=-1, le=1,
                                 description="mean pairwise cosine a cluster must keep")
    tag_max_share: float = Field(0.05, gt=0, le=1, description=(
        "a tag on more live memories than this share (and than max_cluster_size) is too "
        "common to link fragments"))
    max_cluster_chars: int = Field(6000, ge=1, description="member text per cluster")
    min_coverage: float = Field(0.6, ge=0, le=1, description=(
        "share of the members' names and numbers a synthesis must keep, else it is skipped"))
    synthesis_boost: float = Field(0.2, ge=0.15, le=0.30, description=(
        "synthesis importance above the cluster mean when the synthesiser gives none"))
    synthesis_max_tags: int = Field(16, ge=1, le=64)
    consolidate_facts: bool = Field(False, description=(
        "fact nodes keep their fact_key only while live: folding them would hide supersession"))
    # "centroid": a synthesis's vector is the normalised mean of its members' vectors, written
    # in the cluster's transaction: it stands for every member (the embedder reads only the first
    # 256 tokens of a long synthesis) and costs nothing, where embedding ~1,000 long syntheses
    # takes minutes on 2 cores. "embed": the embedder embeds the synthesis text after the run.
    synthesis_vector: Literal["centroid", "embed"] = "centroid"
    lease_seconds: float = Field(900.0, gt=0, description=(
        "a running REM run whose lease is older than this is taken as dead"))
    hold_days: float = Field(30.0, ge=0, description=(
        "a rollback holds its members back from later runs (the daemon's too) for this many "
        "days, or until they change; run-rem --include-held ignores holds; 0: no hold"))
    llm_skip_days: float = Field(7.0, ge=0, description=(
        "a cluster the model failed at (an error, an echo, a detail lost) is not asked of the "
        "same model and prompt again with the same members for this many days; 0: always"))


MIN_TOKEN_CHARS = 16
PLACEHOLDER_TOKEN = "change-me-to-a-long-random-string"  # systemd/remd.env ships with it


class DaemonConfig(_Section):
    interval_seconds: float = Field(60.0, gt=0, le=604_800, allow_inf_nan=False,
                                    description="seconds between trigger checks")
    http: str | None = Field(None, description=(
        "HOST:PORT to serve the HTTP API on (port 0: any free port); unset: no HTTP"))
    http_token: SecretStr | None = Field(None, description=(
        "bearer token every HTTP request but /healthz, /livez and /readyz must carry; "
        "unset: no auth"))
    http_max_body_bytes: int = Field(1_048_576, ge=1024, description="largest request body")
    http_allowed_hosts: tuple[str, ...] = Field((), description=(
        "on a loopback bind, the Host names (any port) a request may give besides localhost, "
        "127.0.0.1 and [::1], such as the name a reverse proxy on this machine passes on; any "
        "other Host is refused (DNS rebinding); changes on restart"))
    http_pool_keep: int = Field(4, ge=1, description=(
        "no longer used (accepted so older config files still load): every namespace now "
        "shares the engine's pool, store.max_connections"))
    backlog_per_tick: int = Field(256, ge=0, description=(
        "memories of the embedding backlog (saved while the embedder was down, or left by an "
        "interrupted bulk save) each tick embeds at most; 0: none"))
    ready_max_backlog: int = Field(1000, ge=0, description=(
        "GET /readyz answers 503 while more memories than this wait for their vector"))
    drain_seconds: float = Field(0.0, ge=0, le=60, allow_inf_nan=False, description=(
        "after SIGTERM, seconds the HTTP API keeps serving (GET /readyz answering 503) "
        "before it stops, so a balancer or probe sees the drain; requests in flight "
        "finish either way"))
    log_format: Literal["auto", "json", "console"] = Field("auto", description=(
        "auto: console text on a terminal, JSON lines otherwise"))
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description=(
        "memory contents are logged only at debug"))

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        # REMD_DAEMON__HTTP="" in an environment file means "no HTTP", not an address.
        if isinstance(data, dict):
            return {k: (None if k in ("http", "http_token") and isinstance(v, str)
                        and not v.strip() else v) for k, v in data.items()}
        return data

    @pydantic.field_validator("http_allowed_hosts")
    @classmethod
    def _host_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for name in names:
            bare = name.strip().lower()
            bare = bare[1:-1] if bare.startswith("[") and bare.endswith("]") else bare
            if not (_HOST_NAME.fullmatch(bare) or (":" in bare and _is_address(bare))):
                raise ValueError(f"http_allowed_hosts: {name[:80]!r} is not a host name or "
                                 "address (give no scheme, port or path)")
            out.append(bare)
        return tuple(out)

    @model_validator(mode="after")
    def _check_http(self) -> DaemonConfig:
        address = self.http_address  # raises ValueError for a bad address
        token = self.http_token.get_secret_value().strip() if self.http_token else None
        # The token guards every namespace (they are not an access boundary): a short or
        # copied-from-the-example one is refused rather than quietly trusted.
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            raise ValueError(f"http_token must be a random string of at least {MIN_TOKEN_CHARS} "
                             "characters (e.g. `openssl rand -hex 24`)")
        if token == PLACEHOLDER_TOKEN:
            raise ValueError("http_token is the example file's placeholder: set a random string "
                             f"of at least {MIN_TOKEN_CHARS} characters (`openssl rand -hex 24`)")
        if address is not None and not _is_loopback(address[0]) and self.http_token is None:
            # Every memory of every namespace would be readable by anyone on the network.
            raise ValueError(f"http binds {address[0]!r}, which is not loopback: set "
                             "daemon.http_token (REMD_DAEMON__HTTP_TOKEN) to serve it there")
        return self

    @property
    def http_address(self) -> tuple[str, int] | None:
        """``http`` as (host, port): "127.0.0.1:8080", "[::1]:8080", "localhost:0"; a bare
        "8080" or ":8080" binds loopback (127.0.0.1), never all interfaces."""
        if self.http is None:
            return None
        host, _, port = self.http.strip().rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not port.isdigit() or int(port) > 65535 or any(c.isspace() for c in host):
            raise ValueError(f"http must look like HOST:PORT, not {self.http!r}")
        return host or "127.0.0.1", int(port)


_HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")  # a DNS name or an IPv4 address


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost; a name or any other address counts as the network."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Config(_Section):
    store: StoreConfig = StoreConfig()
    engine: EngineConfig = EngineConfig()
    embed: EmbedConfig = EmbedConfig()
    tags: TagConfig = TagConfig()
    updates: UpdatesConfig = UpdatesConfig()
    inject: InjectConfig = InjectConfig()
    importance: ImportanceConfig = ImportanceConfig()
    triggers: TriggerConfig = TriggerConfig()
    rem: RemConfig = RemConfig()
    llm: LLMSettings = LLMSettings()
    daemon: DaemonConfig = DaemonConfig()

    @model_validator(mode="before")
    @classmethod
    def _tagging_is_tags(cls, data: Any) -> Any:
        """``[tagging]`` is another name for the ``[tags]`` section."""
        if isinstance(data, Mapping) and "tagging" in data:
            if "tags" in data:
                raise ValueError("give the tags section once: [tags] or [tagging], not both")
            data = {("tags" if k == "tagging" else k): v for k, v in data.items()}
        return data


def _set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"config key {'.'.join(path)!r} conflicts with a value")
        node = child
    node[path[-1]] = value


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """``REMD_SECTION__KEY=value`` (e.g. ``REMD_LLM__BASE_URL``) becomes ``{section: {key: v}}``.

    REMD_DB and REMD_NAMESPACE are CLI options, not config, and are skipped here.
    """
    tree: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith("REMD_") or "__" not in name:
            continue
        path = [p.lower() for p in name[len("REMD_"):].split("__")]
        if len(path) != 2 or not all(path):
            raise ConfigError(f"environment variable {name} must look like REMD_SECTION__KEY")
        _set_path(tree, path, value)
    return tree


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the config from a TOML file, then environment, then ``overrides``.

    Raises ConfigError naming the file or key at fault.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"config file {str(path)!r} does not exist") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from exc
        except OSError as exc:  # a directory, a file this user may not read
            raise ConfigError(f"cannot read config file {str(path)!r}: {exc.strerror}") from exc
    data = _merge(data, _env_overrides(os.environ if env is None else env))
    if overrides:
        data = _merge(data, overrides)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"invalid config value at {where}: {first['msg']}") from exc
