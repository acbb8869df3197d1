// remd inspector: a static page over remd's HTTP API. Every datum comes from the API with the
// bearer token; memory text is only ever put in the page as text nodes (never as HTML), by the
// helpers of dom.js; graph.js draws the tag graph.
"use strict";

const TOKEN_KEY = "remd-token";
const view = document.getElementById("view");
const nav = document.getElementById("nav");
const logout = document.getElementById("logout");
let renderNo = 0; // a newer navigation wins over a slower older one

// -- the token: from the URL fragment (#token=..., never sent to the server), then kept in
// sessionStorage for this tab only, and removed from the address bar. The page asks for one only
// when the server says it wants one (/ui/auth.json), or refuses the one given (401).
function takeTokenFromHash() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  const rest = location.hash.replace(/(^#|&)token=[^&]*/, "$1").replace(/^#&/, "#");
  history.replaceState(null, "", location.pathname + location.search +
    (rest === "#" || rest === "" ? "#/" : rest));
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

// -- the API -----------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, type, message) { super(`${type}: ${message}`); this.status = status; }
}

async function api(method, path, { ns, params, body } = {}) {
  const q = new URLSearchParams(params || {});
  if (ns !== undefined) q.set("namespace", ns);
  const url = path + (q.toString() ? `?${q}` : "");
  const headers = {};
  if (token()) headers.Authorization = `Bearer ${token()}`;
  // A write always sends a JSON body ("{}" when it has nothing to say): the server takes
  // state-changing requests only as application/json.
  const write = method !== "GET" && method !== "HEAD";
  if (write) headers["Content-Type"] = "application/json";
  const r = await fetch(url, { method, headers, cache: "no-store",
    body: write ? JSON.stringify(body === undefined ? {} : body) : undefined });
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const err = (data && data.error) || { type: `HTTP ${r.status}`, message: r.statusText };
    if (r.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    throw new ApiError(r.status, err.type, err.message);
  }
  return data;
}

// -- pages -------------------------------------------------------------------------------------
function setNav(ns, page) {
  nav.replaceChildren();
  const items = [["#/", "Namespaces", "namespaces"]];
  if (ns !== null) {
    const b = `#/ns/${enc(ns)}`;
    items.push([b, `Memories of ${short(ns, 30)}`, "namespace"], [`${b}/tags`, "Tag graph", "tags"],
               [`${b}/rem`, "REM runs", "rem"], [`${b}/stats`, "Stats & triggers", "stats"]);
  }
  for (const [href, label, name] of items) {
    nav.appendChild(h("a", { href, class: name === page ? "current" : null }, label));
  }
  logout.hidden = !token();
}

// Whether the server's API wants a token (null: it could not be asked; the page then finds out).
async function tokenRequired() {
  try {
    const r = await fetch("/ui/auth.json", { cache: "no-store" });
    return r.ok ? (await r.json()).token_required === true : null;
  } catch (e) { return null; }
}

// The token form, with why it is asked for: the server wants a token and this tab has none, or
// the server refused the one given (refused: the ApiError of the 401).
function loginPage(refused) {
  setNav(null, "login");
  const input = h("input", { type: "password", id: "token", autocomplete: "off",
                             placeholder: "bearer token", required: true });
  const form = h("form", { class: "row", id: "login" }, input, h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    route();
  });
  const why = refused
    ? ["The server refused this token (401: ", refused.message, "). Try again."]
    : ["This server asks for a token: its API is served with one (daemon.http_token), and this ",
       "tab has none yet."];
  return [h("h1", {}, "Token"),
          h("p", { id: "login-why", class: refused ? "error" : null }, ...why),
          h("p", {}, "It is the server's API token (daemon.http_token of remd serve --http). ",
            "It stays in this tab's session storage and is sent only as the Authorization header."),
          form];
}

async function namespacesPage() {
  const rows = await api("GET", "/v1/namespaces");
  setNav(null, "namespaces");
  if (!rows.length) return [h("h1", {}, "Namespaces"), h("p", { class: "muted" }, "No memories yet.")];
  return [h("h1", {}, "Namespaces"),
    h("table", { id: "namespaces" },
      h("thead", {}, h("tr", {}, h("th", {}, "namespace"), h("th", { class: "num" }, "live"),
        h("th", { class: "num" }, "all memories"), h("th", {}, ""))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("td", {}, link(`#/ns/${enc(r.namespace)}`, r.namespace)),
        h("td", { class: "num" }, r.live), h("td", { class: "num" }, r.memories),
        h("td", {}, link(`#/ns/${enc(r.namespace)}/rem`, "REM runs"), " · ",
          link(`#/ns/${enc(r.namespace)}/tags`, "tags"), " · ",
          link(`#/ns/${enc(r.namespace)}/stats`, "stats")))))),
  ];
}

function memoryCard(ns, m, extra) {
  return h("div", { class: "card memory", "data-id": m.id },
    preview(ns, m.id, m.content),
    h("div", { class: "meta" }, memLink(ns, m.id, "open", "open"), " · ", status(m.status), " · ",
      m.kind, " · ", when(m.created_at), " · ",
      (m.tags || []).map((t) => tagLink(ns, t)), extra || null));
}

async function namespacePage(ns, params) {
  const inactive = params.get("all") === "1";
  const recent = await api("GET", "/v1/memories", { ns, params: { limit: 20,
    include_inactive: inactive } });
  setNav(ns, "namespace");
  const query = h("input", { type: "search", id: "query", placeholder: "what should the agent remember about…",
                             value: params.get("q") || "" });
  const budget = h("input", { type: "number", id: "budget", min: 0, value: params.get("budget") || 400 });
  const fill = h("input", { type: "checkbox", id: "fill" });
  const results = h("div", { id: "results" });
  const form = h("form", { class: "row", id: "search" }, query,
    h("label", {}, "budget ", budget), h("label", {}, fill, " fill"),
    h("button", { type: "submit" }, "Inject"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    results.replaceChildren(h("p", { class: "muted" }, "Searching…"));
    try {
      const pack = await api("POST", "/v1/inject/explain", { ns, body: {
        query: query.value, token_budget: Number(budget.value), fill: fill.checked } });
      results.replaceChildren(...packView(ns, pack));
      results.dataset.state = "ready";
    } catch (e) { results.replaceChildren(errorBox(e)); results.dataset.state = "error"; }
  });
  const toggle = link(`#/ns/${enc(ns)}${inactive ? "" : "?all=1"}`,
                      inactive ? "live only" : "show every status");
  return [h("h1", {}, `Namespace ${ns}`),
    h("h2", {}, "Search (an inject, explained)"), form, results,
    h("h2", {}, "Recent memories ", h("span", { class: "meta" }, toggle)),
    recent.length ? h("div", { id: "recent" }, recent.map((m) => memoryCard(ns, m)))
                  : h("p", { class: "muted", id: "recent" }, "No memories.")];
}

function packView(ns, pack) {
  const head = h("p", { class: "meta" }, `pack ${pack.pack_id}: ${pack.items.length} item(s), `,
    `${pack.tokens_used}/${pack.budget} tokens`, pack.stop ? ` · stopped: ${pack.stop}` : "");
  const items = pack.items.map((it, i) => h("div", { class: "card item", "data-id": it.id },
    preview(ns, it.id, it.content),
    h("div", { class: "meta" }, `#${i + 1} · score ${num(it.score, 4)} · ${it.tokens} tokens · via `,
      it.sources.join("+") || "–", it.path.length ? ` · path ${it.path.join(" → ")}` : "", " · ",
      memLink(ns, it.id, "open"),
      it.outdated_by ? [" · probably updated by ", memLink(ns, it.outdated_by)] : null)));
  return [head, ...(items.length ? items : [h("p", { class: "muted" }, "Nothing relevant.")]),
    h("details", {}, h("summary", {}, "explanation"),
      h("pre", { class: "explain" }, pack.explanation.map((line) => [said("span", {}, line), "\n"])))];
}

function errorBox(e) { return h("div", { class: "error", role: "alert" }, e.message || String(e)); }

async function memoryPage(ns, id) {
  const [m, history, links] = await Promise.all([
    api("GET", `/v1/memories/${enc(id)}`, { ns }),
    api("GET", `/v1/memories/${enc(id)}/history`, { ns }),
    api("GET", `/v1/memories/${enc(id)}/links`, { ns })]);
  setNav(ns, "memory");
  const rel = links.related;
  const other = (l) => (l.src === id ? l.dst : l.src);
  const relCard = (l) => {
    const o = other(l), r = rel[o];
    return h("li", {}, memLink(ns, o, r ? short(r.content, 120) : `${o} (gone)`),
      r ? [" ", status(r.status)] : null,
      l.context ? h("span", { class: "meta" }, ` — ${l.context} (${num(l.weight, 2)})`) : null);
  };
  const of = (type, dir) => links.links.filter((l) => l.type === type &&
    (dir === "out" ? l.src === id : l.dst === id));
  const sections = [];
  const supersededBy = of("SUPERSEDES", "in"), supersedes = of("SUPERSEDES", "out");
  const sources = of("DERIVED_FROM", "out"), foldedInto = of("DERIVED_FROM", "in");
  if (m.kind === "synthesis" || sources.length) {
    sections.push(h("h2", {}, "Sources of this synthesis"),
      h("ul", { id: "sources" }, sources.map(relCard)));
  }
  sections.push(h("h2", {}, "Superseded by"), supersededBy.length
    ? h("ul", { id: "superseded-by" }, supersededBy.map(relCard))
    : h("p", { class: "muted", id: "superseded-by" }, "Nothing newer replaces it."));
  sections.push(h("h2", {}, "Supersedes"), supersedes.length
    ? h("ul", { id: "supersedes" }, supersedes.map(relCard))
    : h("p", { class: "muted", id: "supersedes" }, "It replaces nothing."));
  if (foldedInto.length || m.status === "deprecated") {
    sections.push(h("h2", {}, "Folded into"), h("ul", { id: "folded-into" },
      foldedInto.length ? foldedInto.map(relCard)
        : h("li", {}, m.deprecated_by ? memLink(ns, m.deprecated_by) : "–")));
  }
  const others = links.links.filter((l) => !["SUPERSEDES", "DERIVED_FROM"].includes(l.type));
  if (others.length) {
    sections.push(h("h2", {}, "Other links"), h("table", {}, h("tbody", {}, others.map((l) =>
      h("tr", {}, h("td", {}, l.src === id ? `${l.type} →` : `← ${l.type}`),
        h("td", {}, memLink(ns, other(l), rel[other(l)] ? short(rel[other(l)].content, 100) : other(l))),
        h("td", { class: "meta" }, l.context || ""))))));
  }
  if (history.length > 1) {
    sections.push(h("h2", {}, "History (oldest first)"), h("ol", { id: "history" },
      history.map((n) => h("li", {}, n.id === id ? said("b", {}, short(n.content, 140))
        : memLink(ns, n.id, short(n.content, 140)), " ", status(n.status)))));
  }
  const message = h("div", { id: "action-result" });
  const actions = h("div", { class: "row", id: "actions" });
  if (m.status !== "forgotten") {
    const forget = h("button", { type: "button", class: "danger", id: "forget" }, "Forget…");
    forget.addEventListener("click", () => {
      const yes = h("button", { type: "button", class: "danger", id: "forget-confirm" }, "Yes, forget it");
      yes.addEventListener("click", () => act(yes, message, async () => {
        const after = await api("DELETE", `/v1/memories/${enc(id)}`, { ns });
        return `Forgotten: its status is now ${after.status}.`;
      }));
      forget.replaceWith(h("span", {}, "It will never be injected again. ", yes));
    });
    actions.appendChild(forget);
  }
  if (m.status === "superseded" || supersededBy.length) {
    const restore = h("button", { type: "button", id: "restore" }, "Restore (undo a wrong update)");
    restore.addEventListener("click", () => act(restore, message, async () => {
      const r = await api("POST", `/v1/memories/${enc(id)}/restore`, { ns });
      return `Restored: live again (${JSON.stringify(r)}).`;
    }));
    actions.appendChild(restore);
  }
  return [h("h1", {}, `Memory ${m.id}`),
    said("div", { class: "content", id: "memory-text" }, m.content),
    h("table", { id: "memory-meta" }, h("tbody", {},
      [["status", status(m.status)], ["kind", m.kind], ["created", when(m.created_at)],
       ["tags", (m.tags || []).map((t) => tagLink(ns, t))],
       ["importance", num(m.importance, 3)], ["confidence", num(m.confidence, 3)],
       ["accessed", `${m.access_count} time(s), last ${when(m.last_access)}`],
       ["source", m.source ? said("span", {}, m.source) : "–"],
       ["fact", m.fact_key ? [said("span", {}, m.fact_key), " = ", said("span", {}, m.fact_value)] : "–"],
       ["valid", `${when(m.valid_from)} → ${when(m.valid_until)}`],
       ["deprecated by", m.deprecated_by ? memLink(ns, m.deprecated_by) : "–"]]
        .map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))))),
    actions, message, ...sections];
}

async function act(button, message, fn) {
  button.disabled = true;
  try {
    const text = await fn();
    message.replaceChildren(h("p", { class: "ok" }, text, " ",
      h("a", { href: location.hash, id: "reload", onclick: (ev) => { ev.preventDefault(); route(); } },
        "reload")));
    message.dataset.state = "done";
  } catch (e) {
    message.replaceChildren(errorBox(e));
    message.dataset.state = "error";
    button.disabled = false;
  }
}

async function tagsPage(ns) {
  const tags = await api("GET", "/v1/tags", { ns, params: { limit: 60 } });
  setNav(ns, "tags");
  const input = h("input", { type: "text", id: "tag", placeholder: "a tag" });
  const form = h("form", { class: "row" }, input, h("button", { type: "submit" }, "Draw"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (input.value.trim()) location.hash = `#/ns/${enc(ns)}/tags/${enc(input.value.trim())}`;
  });
  return [h("h1", {}, "Tag graph"), form, h("h2", {}, "Most used tags"),
    tags.length ? h("p", { id: "top-tags" }, tags.map((t) => tagLink(ns, t.tag, `${t.tag} (${t.memories})`)))
      : h("p", { class: "muted", id: "top-tags" }, "No tags.")];
}

// How many tags a drawing may ask for (the server holds at most remd.query.taggraph.MAX_NODES).
const GRAPH_SIZES = ["40", "100", "200", "300"];

// The address of a tag's drawing with these options (each left out when it is the default).
function graphHref(ns, tag, opts) {
  const q = new URLSearchParams();
  if (opts.depth !== "2") q.set("depth", opts.depth);
  if (opts.tags !== "40") q.set("tags", opts.tags);
  if (opts.labels === "all") q.set("labels", "all");
  return `#/ns/${enc(ns)}/tags/${enc(tag)}${q.toString() ? `?${q}` : ""}`;
}

async function tagGraphPage(ns, tag, params) {
  const opts = { depth: params.get("depth") || "2", tags: params.get("tags") || "40",
                 labels: params.get("labels") === "all" ? "all" : "fit" };
  const g = await api("GET", `/v1/tags/${enc(tag)}/graph`, { ns,
    params: { depth: opts.depth, max_nodes: opts.tags } });
  setNav(ns, "tags");
  // Drawn as wide as the page's column (less the frame's border), so a label's font is its
  // CSS size; graph.js measures the labels and keeps them apart and inside the frame.
  const css = getComputedStyle(view);
  const width = view.clientWidth - parseFloat(css.paddingLeft) - parseFloat(css.paddingRight) - 2;
  const svg = tagGraphSvg(g, Math.max(360, Math.floor(width)), (t) => {
    location.hash = graphHref(ns, t, opts);
  }, opts.labels === "all");
  const choice = (name, values, shown) => values.map((v, i) => [i ? " " : "",
    v === opts[name] ? h("b", {}, shown[i]) : link(graphHref(ns, tag, { ...opts, [name]: v }), shown[i])]);
  const labelled = Number(svg.dataset.labelled), quiet = g.nodes.length - labelled;
  return [said("h1", {}, `Tags around ${g.tag}`),
    h("p", { class: "meta" }, `${g.nodes.length} tags, ${g.edges.length} co-occurrence edges `,
      `(thicker: stronger), ${g.subtypes.length} subtype links (dashed). `,
      quiet ? `${labelled} labelled, the nearest and most used; hover or focus a circle for its name. `
        : "", "Click a tag to centre on it."),
    h("p", { class: "meta", id: "graph-options" }, "Depth: ", choice("depth", ["1", "2", "3"], ["1", "2", "3"]),
      " · Tags: ", choice("tags", GRAPH_SIZES, GRAPH_SIZES), quiet || opts.labels === "all"
        ? [" · Labels: ", choice("labels", ["fit", "all"], ["as many as fit", "every tag"])] : null),
    svg];
}

// "Roll back…" asks first, as "Forget…" does, saying what the rollback will undo; one question
// is open at a time.
let openQuestion = null;
function rollbackButton(ns, run, message) {
  const b = h("button", { type: "button", class: "danger rollback", "data-run": run.run_id },
              "Roll back…");
  b.addEventListener("click", () => {
    if (openQuestion) openQuestion();
    const folded = run.live_before - run.live_after + run.synthesised;
    const yes = h("button", { type: "button", class: "danger", id: "rollback-confirm" },
                  "Yes, roll it back");
    const no = h("button", { type: "button", id: "rollback-cancel" }, "Cancel");
    const question = h("span", { class: "question" },
      `Roll back ${run.run_id}? The ${folded} memories it folded come back live and its `,
      `${run.synthesised} syntheses are removed. `, yes, " ", no);
    const close = () => { if (question.isConnected) question.replaceWith(b); openQuestion = null; };
    no.addEventListener("click", close);
    yes.addEventListener("click", () => {
      openQuestion = null;
      no.disabled = true;
      act(yes, message, async () => {
        const r = await api("POST", `/v1/rem/runs/${enc(run.run_id)}/rollback`, { ns });
        return `Rolled back ${r.run_id}: ${r.members_restored} memories restored, ` +
          `${r.synthesis_removed} syntheses removed, ${r.held} held back from later runs.`;
      });
    });
    b.replaceWith(question);
    openQuestion = close;
    yes.focus();
  });
  return b;
}

async function runsPage(ns) {
  const runs = await api("GET", "/v1/rem/runs", { ns, params: { limit: 50 } });
  setNav(ns, "rem");
  const message = h("div", { id: "action-result" });
  if (!runs.length) return [h("h1", {}, "REM runs"), h("p", { class: "muted", id: "runs" }, "No REM run yet.")];
  return [h("h1", {}, "REM runs"), message, h("table", { id: "runs" },
    h("thead", {}, h("tr", {}, ["run", "started", "status", "trigger", "flagged", "folded clusters",
      "live before → after", ""].map((t) => h("th", {}, t)))),
    h("tbody", {}, runs.map((r) => h("tr", { "data-run": r.run_id },
      h("td", {}, link(`#/ns/${enc(ns)}/rem/${enc(r.run_id)}`, r.run_id)),
      h("td", {}, posix(r.started_at)), h("td", {}, status(r.status)), h("td", {}, r.trigger || "–"),
      h("td", { class: "num" }, r.flagged), h("td", { class: "num" }, `${r.synthesised}/${r.clusters}`),
      h("td", { class: "num" }, `${r.live_before} → ${r.live_after}`),
      h("td", {}, r.can_rollback ? rollbackButton(ns, r, message)
        : h("span", { class: "meta" }, r.why_not))))))];
}

async function runPage(ns, runId) {
  const d = await api("GET", `/v1/rem/runs/${enc(runId)}`, { ns });
  setNav(ns, "rem");
  const r = d.run, message = h("div", { id: "action-result" });
  const folds = d.folds.map((f) => h("div", { class: "card fold-card", "data-cluster": f.cluster_no },
    h("div", { class: "meta" }, `cluster ${f.cluster_no}: ${f.status}`, f.reason ? ` (${f.reason})` : "",
      ` · ${f.tokens_before} → ${f.tokens_after} tokens`),
    h("div", { class: "fold" },
      h("ul", { class: "members" }, f.members.map((m) => h("li", {},
        memLink(ns, m.id, m.preview || m.id), " ",
        h("span", { class: "meta" }, `${m.tokens} tokens, ${m.status_before} → `),
        m.status_now ? status(m.status_now) : "gone"))),
      h("div", { class: "arrow" }, f.status === "committed" ? "→" : "×"),
      h("div", { class: "synthesis" }, f.synthesis_id
        ? [memLink(ns, f.synthesis_id, f.synthesis === null ? `${f.synthesis_id} (removed)` : "synthesis"),
           f.synthesis !== null ? h("div", { class: "text" }, f.synthesis) : null]
        : h("span", { class: "muted" }, "kept as they were")))));
  return [h("h1", {}, `REM run ${r.run_id}`),
    h("div", { class: "numbers", id: "run-numbers" },
      [["status", status(r.status)], ["tokens before → after", `${d.tokens_before} → ${d.tokens_after}`],
       ["live before → after", `${r.live_before} → ${r.live_after}`], ["flagged", r.flagged],
       ["clusters folded", `${r.synthesised}/${r.clusters}`], ["trigger", r.trigger || "–"],
       ["synthesiser", `${r.synthesiser} ${r.model}`], ["started", posix(r.started_at)]]
        .map(([k, v]) => h("div", {}, h("span", { class: "meta" }, k), h("b", {}, v)))),
    r.why ? h("p", { class: "meta" }, r.why) : null,
    r.error ? h("p", { class: "error" }, r.error) : null,
    h("p", { id: "rollback" }, d.can_rollback ? rollbackButton(ns, r, message)
      : h("span", { class: "meta" }, `Cannot be rolled back: ${d.why_not}.`)),
    message, h("h2", {}, "What it folded into what"),
    folds.length ? h("div", { id: "folds" }, folds) : h("p", { class: "muted", id: "folds" }, "No clusters.")];
}

async function statsPage(ns) {
  const [st, tr] = await Promise.all([api("GET", "/v1/stats", { ns }), api("GET", "/v1/triggers", { ns })]);
  setNav(ns, "stats");
  const skip = new Set(["namespace", "by_kind"]);
  return [h("h1", {}, `Stats of ${ns}`),
    h("div", { class: "numbers", id: "stats" }, Object.entries(st).filter(([k]) => !skip.has(k))
      .map(([k, v]) => h("div", {}, h("span", { class: "meta" }, k.replaceAll("_", " ")), h("b", {}, num(v))))),
    h("h2", {}, "REM triggers ", h("span", { class: "meta" },
      tr.should_run ? `fired: ${tr.fired.join(", ")}` : "none fired")),
    h("table", { id: "triggers" }, h("thead", {}, h("tr", {},
      ["trigger", "fired", "enabled", "value", "threshold", "why"].map((t) => h("th", {}, t)))),
      h("tbody", {}, tr.triggers.map((t) => h("tr", {}, h("td", {}, t.name),
        h("td", {}, t.fired ? "yes" : "no"), h("td", {}, t.enabled ? "yes" : "no"),
        h("td", { class: "num" }, num(t.value, typeof t.value === "number" && !Number.isInteger(t.value) ? 3 : undefined)),
        h("td", { class: "num" }, num(t.threshold)), h("td", { class: "meta" }, t.explanation)))))];
}

// -- the router ----------------------------------------------------------------------------------
function parse(hash) {
  const [path, query] = hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query || "") };
}

function pageFor(parts, params) {
  if (!parts.length) return ["namespaces", () => namespacesPage()];
  if (parts[0] !== "ns" || parts.length < 2) return null;
  const ns = parts[1], rest = parts.slice(2);
  if (!rest.length) return ["namespace", () => namespacePage(ns, params)];
  if (rest[0] === "m" && rest.length === 2) return ["memory", () => memoryPage(ns, rest[1])];
  if (rest[0] === "tags" && rest.length === 1) return ["tags", () => tagsPage(ns)];
  if (rest[0] === "tags" && rest.length === 2) return ["tag-graph", () => tagGraphPage(ns, rest[1], params)];
  if (rest[0] === "rem" && rest.length === 1) return ["rem", () => runsPage(ns)];
  if (rest[0] === "rem" && rest.length === 2) return ["run", () => runPage(ns, rest[1])];
  if (rest[0] === "stats" && rest.length === 1) return ["stats", () => statsPage(ns)];
  return null;
}

async function route() {
  const no = ++renderNo;
  takeTokenFromHash();
  openQuestion = null;
  document.body.dataset.state = "loading";
  const show = (name, nodes) => {
    if (no !== renderNo) return;
    view.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined));
    document.body.dataset.page = name;
    document.body.dataset.state = "ready";
  };
  const { parts, params } = parse(location.hash);
  const found = pageFor(parts, params);
  if (!found) { setNav(null, ""); show("unknown", [h("h1", {}, "No such page"), link("#/", "namespaces")]); return; }
  if (!token() && await tokenRequired()) { show("login", loginPage(null)); return; }
  try {
    show(found[0], await found[1]());
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) { show("login", loginPage(e)); return; }
    show("error", [h("h1", {}, "Could not load this page"), errorBox(e)]);
  }
}

logout.addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); route(); });
window.addEventListener("hashchange", route);
route();
