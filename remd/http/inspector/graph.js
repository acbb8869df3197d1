// remd inspector: the tag graph's drawing. d3-force (vendor/, see vendor/NOTICE) lays the tags
// out; each tag is a circle with its label beside it, and the pair is one box that no other
// box may overlap and that stays inside the frame. On a dense graph (a few hundred tags) the
// frame grows to about a square and the most important tags (nearest the centre, then most
// used) keep their labels; a tag whose label can't be drawn clear of the others is a circle
// alone, whose name shows on hover or keyboard focus (and is its <title> and aria-label).
// The layout is deterministic (rings by hop count to start with, d3-force's own seeded
// randomness), so one graph is always drawn alike. Uses s() of dom.js.
"use strict";

const GRAPH_GAP = 3; // between a circle and its label
const GRAPH_PAD = 4; // the least room between two tags' boxes, and between a box and the frame
const GRAPH_TRIES = 6; // drawings, each taller than the last, before one that holds every box
const GRAPH_FILL = 0.3; // the share of the tallest frame that labelled boxes may cover
const GRAPH_SQUARE = 900; // the tallest frame: as tall as wide, and at least this (CSS px),
const GRAPH_DOTS = 0.12; // and so tall that the circles cover at most this share of it

// Each label's size in drawing units (CSS px), measured by the browser in a hidden SVG of the
// same class as the drawing, so with the font the drawing will use.
function measureLabels(tags) {
  const probe = s("svg", { class: "graph probe", "aria-hidden": "true" });
  const texts = tags.map((t) => probe.appendChild(s("text", { x: 0, y: 0 }, t)));
  document.body.appendChild(probe);
  const sizes = texts.map((t) => {
    const b = t.getBBox();
    return { w: b.width, top: b.y, h: b.height };
  });
  probe.remove();
  return sizes;
}

// fn(a, b) for each pair of boxes that may be closer than GRAPH_PAD along x (a before b in
// N's order), at x + vx when `ahead`: a sweep over the boxes sorted by their left edges.
function nearPairs(N, ahead, fn) {
  const at = (d) => d.x + (ahead ? d.vx : 0);
  const order = [...N].sort((a, b) => at(a) + a.box.l - (at(b) + b.box.l) || a.index - b.index);
  for (let i = 0; i < order.length; i++) {
    const a = order[i], end = at(a) + a.box.r + GRAPH_PAD;
    for (let j = i + 1; j < order.length && at(order[j]) + order[j].box.l < end; j++) {
      if (a.index < order[j].index) fn(a, order[j]); else fn(order[j], a);
    }
  }
}

// A force that pushes apart any two boxes that overlap (with GRAPH_PAD between them), along
// the axis where they overlap least.
function forceBoxes(strength) {
  let nodes = [];
  function force() {
    nearPairs(nodes, true, (a, b) => {
      const push = overlapOf(a, a.x + a.vx, a.y + a.vy, b, b.x + b.vx, b.y + b.vy);
      if (!push) return;
      const [dx, dy] = push, share = a.fx == null && b.fx == null ? 0.5 : 1;
      const ka = a.fx == null ? share * strength : 0, kb = b.fx == null ? share * strength : 0;
      a.vx -= dx * ka; a.vy -= dy * ka; b.vx += dx * kb; b.vy += dy * kb;
    });
  }
  force.initialize = (n) => { nodes = n; };
  return force;
}

// How far b must move (dx, dy) to clear a by GRAPH_PAD, along the shorter way; null when clear.
function overlapOf(a, ax, ay, b, bx, by) {
  const A = a.box, B = b.box;
  const ox = Math.min(ax + A.r, bx + B.r) - Math.max(ax + A.l, bx + B.l) + GRAPH_PAD;
  const oy = Math.min(ay + A.b, by + B.b) - Math.max(ay + A.t, by + B.t) + GRAPH_PAD;
  if (ox <= 0 || oy <= 0) return null;
  const cx = (bx + (B.l + B.r) / 2) - (ax + (A.l + A.r) / 2);
  const cy = (by + (B.t + B.b) / 2) - (ay + (A.t + A.b) / 2);
  // the index breaks a tie (two boxes with the same centre) the same way every time
  const sx = cx > 0 || (cx === 0 && b.index > a.index) ? 1 : -1;
  const sy = cy > 0 || (cy === 0 && b.index > a.index) ? 1 : -1;
  return ox / (A.r - A.l + B.r - B.l) < oy / (A.b - A.t + B.b - B.t) ? [sx * ox, 0] : [0, sy * oy];
}

function clamp(d, W, H) {
  d.x = Math.min(W - GRAPH_PAD - d.box.r, Math.max(GRAPH_PAD - d.box.l, d.x));
  d.y = Math.min(H - GRAPH_PAD - d.box.b, Math.max(GRAPH_PAD - d.box.t, d.y));
}

// Boxes a and b overlap by more than a hair (the drawing's final check).
function overlapping(a, b) {
  const A = a.box, B = b.box, hair = 0.5;
  return Math.min(a.x + A.r, b.x + B.r) - Math.max(a.x + A.l, b.x + B.l) > hair &&
         Math.min(a.y + A.b, b.y + B.b) - Math.max(a.y + A.t, b.y + B.t) > hair;
}

function overlaps(N) {
  let n = 0;
  nearPairs(N, false, (a, b) => { n += overlapping(a, b); });
  return n;
}

// After the simulation: move boxes closer than GRAPH_PAD apart until none is (or give up),
// each step kept inside the frame.
function separate(N, W, H) {
  for (let round = 0; round < 200; round++) {
    let moved = false;
    nearPairs(N, false, (a, b) => {
      const push = overlapOf(a, a.x, a.y, b, b.x, b.y);
      if (!push) return;
      moved = true;
      const [dx, dy] = push;
      const ka = a.fx == null ? (b.fx == null ? 0.5 : 1) : 0, kb = b.fx == null ? 1 - ka : 0;
      a.x -= dx * ka; a.y -= dy * ka; b.x += dx * kb; b.y += dy * kb;
      clamp(a, W, H); clamp(b, W, H);
    });
    if (!moved) break;
  }
}

// What separate() left overlapping in a frame that may grow: top to bottom, each box moves
// down below any box above it that it is too close to (it always ends, with none).
function settle(N) {
  const done = [];
  for (const d of [...N].sort((a, b) => a.y + a.box.t - (b.y + b.box.t) || a.index - b.index)) {
    for (let near = true; near;) {
      near = false;
      for (const o of done) {
        if (!overlapOf(o, o.x, o.y, d, d.x, d.y)) continue;
        d.y = o.y + o.box.b - d.box.t + GRAPH_PAD + 0.01; // (a hair more: rounding)
        near = true;
      }
    }
    done.push(d);
  }
}

// The layout, spread to use the frame's width: every box's centre moves away from the middle
// by the same factor (at most GRAPH_SPREAD), which only widens the gaps between boxes; the
// frame's height is then the drawing's own (at least minH).
const GRAPH_SPREAD = 1.6;
function spread(N, W, minH) {
  const l = Math.min(...N.map((d) => d.x + d.box.l)), r = Math.max(...N.map((d) => d.x + d.box.r));
  const t = Math.min(...N.map((d) => d.y + d.box.t)), b = Math.max(...N.map((d) => d.y + d.box.b));
  const k = Math.max(1, Math.min(GRAPH_SPREAD, (W - 2 * GRAPH_PAD) / (r - l)));
  const H = Math.max(minH, Math.ceil((b - t) * k + 2 * GRAPH_PAD));
  const cx = (l + r) / 2, cy = (t + b) / 2;
  for (const d of N) {
    const bx = (d.box.l + d.box.r) / 2, by = (d.box.t + d.box.b) / 2; // the box's own centre
    d.x = W / 2 + (d.x + bx - cx) * k - bx;
    d.y = H / 2 + (d.y + by - cy) * k - by;
    delete d.fx; delete d.fy;
  }
  return H;
}

function layoutTags(nodes, links, W, H, minH, grow) {
  const far = Math.max(2, ...nodes.map((d) => d.hops)), many = Math.max(1, nodes.length / 40);
  const N = nodes.map((d) => {
    const ring = nodes.filter((x) => x.hops === d.hops), k = ring.indexOf(d);
    const a = (2 * Math.PI * k) / Math.max(ring.length, 1) + d.hops * 0.5;
    const r = (d.hops / far) * Math.min(W, H) * 0.4;
    const n = { tag: d.tag, rank: d.rank, full: d.full, dot: d.dot, side: "right",
                box: d.labelled ? d.full : d.dot, x: W / 2 + r * Math.cos(a), y: H / 2 + r * Math.sin(a) };
    if (d.hops === 0) { n.fx = W / 2 - (n.box.l + n.box.r) / 2; n.fy = H / 2; }
    return n;
  });
  // many tags: a weaker charge each (their sum pushes every tag against the frame otherwise)
  const sim = d3.forceSimulation(N).stop()
    .force("link", d3.forceLink(links.map((l) => ({ ...l }))).id((d) => d.tag)
      .distance((l) => 30 + 40 * (1 - l.weight)))
    .force("charge", d3.forceManyBody().strength(-160 / Math.sqrt(many)))
    .force("x", d3.forceX(W / 2).strength(0.04))
    .force("y", d3.forceY(H / 2).strength(0.04 * W / H))
    .force("boxes", forceBoxes(0.6));
  for (let t = 0, n = Math.ceil(Math.log(sim.alphaMin()) / Math.log(1 - sim.alphaDecay())); t < n; t++) {
    sim.tick();
    for (const d of N) clamp(d, W, H);
  }
  let drawnH = spread(N, W, minH);
  if (grow) { // boxes may move down past the frame, which then grows to hold them
    separate(N, W, Infinity);
    if (overlaps(N)) settle(N);
    const t = Math.min(...N.map((d) => d.y + d.box.t)), b = Math.max(...N.map((d) => d.y + d.box.b));
    drawnH = Math.max(minH, Math.ceil(b - t + 2 * GRAPH_PAD));
    for (const d of N) d.y += (drawnH - (b - t)) / 2 - t;
  } else separate(N, W, drawnH);
  return { N, H: drawnH, left: overlaps(N) };
}

// Dense drawings: the less important tag (the higher rank) of each pair of boxes still
// overlapping loses its label, until no pair overlaps or no label is left to drop.
function unlabel(N, W, H) {
  for (let round = 0; round < N.length; round++) {
    let dropped = 0;
    nearPairs(N, false, (a, b) => {
      if (!overlapping(a, b)) return;
      const [lo, hi] = a.rank < b.rank ? [a, b] : [b, a];
      const loser = hi.box !== hi.dot ? hi : lo.box !== lo.dot ? lo : null;
      if (loser) { loser.box = loser.dot; dropped++; }
    });
    if (!dropped) break;
    separate(N, W, H);
  }
}

// Then each unlabelled tag, most important first, gets its label back where it now fits: to
// the right of its circle, or else to the left.
function relabel(N, W, H) {
  const order = N.filter((d) => d.box === d.dot).sort((a, b) => a.rank - b.rank);
  for (const d of order) {
    const left = { l: -d.full.r, r: -d.full.l, t: d.full.t, b: d.full.b };
    for (const [side, box] of [["right", d.full], ["left", left]]) {
      const inside = d.x + box.l >= GRAPH_PAD && d.x + box.r <= W - GRAPH_PAD &&
                     d.y + box.t >= GRAPH_PAD && d.y + box.b <= H - GRAPH_PAD;
      const probe = { x: d.x, y: d.y, box: { l: box.l - GRAPH_PAD, r: box.r + GRAPH_PAD,
                                              t: box.t - GRAPH_PAD, b: box.b + GRAPH_PAD } };
      if (inside && N.every((o) => o === d || !overlapping(probe, o))) {
        d.box = box; d.side = side;
        break;
      }
    }
  }
}

// The frame's first height, and its tallest before tags lose labels (every tag labelled: no
// tallest); which tags are labelled to start with: by rank while their boxes cover at most
// GRAPH_FILL of the tallest frame.
function frameFor(nodes, W, minH, all) {
  const area = (b) => (b.r - b.l + GRAPH_PAD) * (b.b - b.t + GRAPH_PAD);
  let used = nodes.reduce((sum, d) => sum + area(d.dot), 0);
  const maxH = all ? Infinity : Math.max(W, GRAPH_SQUARE, used / (GRAPH_DOTS * W));
  for (const d of [...nodes].sort((a, b) => a.rank - b.rank)) {
    const more = area(d.full) - area(d.dot);
    d.labelled = all || used + more <= GRAPH_FILL * W * maxH;
    if (!d.labelled) break;
    used += more;
  }
  // first as tall as 4 times the boxes' area needs, at most the tallest frame (or, every tag
  // labelled, 0.65 as tall as wide unless the labels would cover more than GRAPH_FILL of it)
  const cap = all ? Math.max(W * 0.65, used / (GRAPH_FILL * W)) : maxH;
  return { H: Math.round(Math.max(W * 0.5, minH, Math.min(cap, (4 * used) / W))), maxH };
}

// The <svg> of a tag neighbourhood (the /v1/tags/{tag}/graph answer) drawn `width` units wide
// (the page's width in CSS px, so labels are drawn at their CSS size); pick(tag) on a click.
// The frame's height is the drawing's own; a drawing with boxes still overlapping is redrawn
// in a taller frame, up to about a square, past which the less important tags lose their
// labels (all: every tag keeps its label, the frame as tall as that takes). data-overlaps on
// the <svg> says how many pairs the last drawing left (0), data-labelled how many labels.
function tagGraphSvg(g, width, pick, all) {
  const maxDf = Math.max(1, ...g.nodes.map((d) => d.memories));
  const sizes = measureLabels(g.nodes.map((d) => d.tag));
  const nodes = g.nodes.map((d, i) => {
    const r = 5 + 13 * Math.sqrt(d.memories / maxDf), z = sizes[i];
    return { ...d, r, label: z, dot: { l: -r, r: r, t: -r, b: r },
             full: { l: -r, r: r + GRAPH_GAP + z.w, t: Math.min(-r, -z.h / 2), b: Math.max(r, z.h / 2) } };
  });
  // importance: nearest the centre first, then the most used, then the server's order
  [...nodes.keys()].sort((a, b) => nodes[a].hops - nodes[b].hops ||
    nodes[b].memories - nodes[a].memories || a - b).forEach((i, k) => { nodes[i].rank = k; });
  // at least as wide as the widest tag (a 64-character tag on a phone): then scaled down
  const W = Math.max(width, ...nodes.map((d) => Math.ceil(d.full.r - d.full.l + 2 * GRAPH_PAD)));
  const known = new Set(nodes.map((d) => d.tag));
  const links = [...g.edges.map((e) => ({ source: e.a, target: e.b, weight: e.weight })),
                 ...g.subtypes.map((st) => ({ source: st.child, target: st.parent, weight: 0.5 }))]
    .filter((l) => known.has(l.source) && known.has(l.target) && l.source !== l.target);
  const minH = Math.min(360, W * 0.6), frame = frameFor(nodes, W, minH, all);
  let H = frame.H, placed;
  for (let attempt = 0; attempt < GRAPH_TRIES; attempt++) {
    placed = layoutTags(nodes, links, W, H, minH, all);
    if (placed.left && Math.round(H * 1.2) > frame.maxH) unlabel(placed.N, W, placed.H);
    placed.left = overlaps(placed.N);
    if (!placed.left) break;
    H = Math.round(H * 1.2);
  }
  const P = placed.N, at = new Map(P.map((d) => [d.tag, d]));
  H = placed.H;
  if (!all) relabel(P, W, H);
  const labelled = P.filter((d) => d.box !== d.dot).length;
  const svg = s("svg", { class: "graph", id: "tag-graph", viewBox: `0 0 ${W} ${H}`, role: "group",
                         "aria-label": `tags around ${g.tag}`, "data-overlaps": placed.left,
                         "data-labelled": labelled });
  for (const e of g.edges) {
    const a = at.get(e.a), b = at.get(e.b);
    if (!a || !b) continue;
    svg.appendChild(s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y,
      "stroke-width": (0.5 + 4 * e.weight).toFixed(2), "stroke-opacity": (0.35 + 0.6 * e.weight).toFixed(2) },
      s("title", {}, `${e.a} — ${e.b}: weight ${e.weight}, together in ${e.count}`)));
  }
  for (const st of g.subtypes) {
    const a = at.get(st.child), b = at.get(st.parent);
    if (!a || !b) continue;
    svg.appendChild(s("line", { class: "subtype", x1: a.x, y1: a.y, x2: b.x, y2: b.y },
      s("title", {}, `${st.child} is a kind of ${st.parent}`)));
  }
  const tip = s("text", {}), tipBox = s("rect", { rx: 3 });
  const tipG = s("g", { class: "tip", "aria-hidden": "true", visibility: "hidden" }, tipBox, tip);
  nodes.forEach((d, i) => {
    const p = P[i], quiet = p.box === p.dot, y = p.y - d.label.top - d.label.h / 2;
    const x = p.side === "left" ? p.x - d.r - GRAPH_GAP - d.label.w : p.x + d.r + GRAPH_GAP;
    const node = s("g", { class: quiet ? "node quiet" : "node", "data-tag": d.tag, tabindex: 0,
                          "aria-label": d.tag, onclick: () => pick(d.tag) },
      s("circle", { cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: d.r.toFixed(1),
                    class: d.hops === 0 ? "centre" : d.hops > 1 ? "hop2" : "hop1" }),
      quiet ? null : s("text", { x: x.toFixed(1), y: y.toFixed(1) }, d.tag),
      s("title", {}, `${d.tag}: ${d.memories} memories, ${d.hops} hop(s) away`));
    node.addEventListener("keydown", (ev) => { if (ev.key === "Enter") pick(d.tag); });
    if (quiet) {
      const show = () => showTip(tipG, tip, tipBox, d, p, W, H);
      const hide = () => tipG.setAttribute("visibility", "hidden");
      node.addEventListener("mouseenter", show); node.addEventListener("focus", show);
      node.addEventListener("mouseleave", hide); node.addEventListener("blur", hide);
    }
    svg.appendChild(node);
  });
  svg.appendChild(tipG);
  return svg;
}

// The name of an unlabelled tag, drawn over everything (the last child of the drawing) beside
// its circle, on the side where it fits, inside the frame.
function showTip(tipG, tip, tipBox, d, p, W, H) {
  const z = d.label, cy = Math.min(H - GRAPH_PAD - z.h / 2, Math.max(GRAPH_PAD + z.h / 2, p.y));
  let x = p.x + d.r + GRAPH_GAP;
  if (x + z.w > W - GRAPH_PAD) x = p.x - d.r - GRAPH_GAP - z.w;
  x = Math.max(GRAPH_PAD, Math.min(W - GRAPH_PAD - z.w, x));
  tip.textContent = d.tag;
  tip.setAttribute("x", x.toFixed(1));
  tip.setAttribute("y", (cy - z.top - z.h / 2).toFixed(1));
  for (const [k, v] of [["x", x - 2], ["y", cy - z.h / 2 - 1], ["width", z.w + 4], ["height", z.h + 2]]) {
    tipBox.setAttribute(k, v.toFixed(1));
  }
  tipG.setAttribute("visibility", "visible");
}
