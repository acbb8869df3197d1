// remd inspector: the tag graph's drawing. d3-force (vendor/, see vendor/NOTICE) lays the tags
// out; each tag is a circle with its label to the right, and the pair is one box that no other
// box may overlap and that stays inside the frame. The layout is deterministic (rings by hop
// count to start with, d3-force's own seeded randomness), so one graph is always drawn alike.
// Uses s() of dom.js.
"use strict";

const GRAPH_GAP = 3; // between a circle and its label
const GRAPH_PAD = 4; // the least room between two tags' boxes, and between a box and the frame
const GRAPH_TRIES = 6; // drawings, each taller than the last, before one that holds every box

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

// A force that pushes apart any two boxes that overlap (with GRAPH_PAD between them), along
// the axis where they overlap least. O(n²): a drawing holds a few dozen tags.
function forceBoxes(strength) {
  let nodes = [];
  function force() {
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = nodes[i], b = nodes[j];
        const push = overlapOf(a, a.x + a.vx, a.y + a.vy, b, b.x + b.vx, b.y + b.vy);
        if (!push) continue;
        const [dx, dy] = push, share = a.fx == null && b.fx == null ? 0.5 : 1;
        const ka = a.fx == null ? share * strength : 0, kb = b.fx == null ? share * strength : 0;
        a.vx -= dx * ka; a.vy -= dy * ka; b.vx += dx * kb; b.vy += dy * kb;
      }
    }
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
  for (let i = 0; i < N.length; i++) for (let j = i + 1; j < N.length; j++) n += overlapping(N[i], N[j]);
  return n;
}

// After the simulation: move boxes closer than GRAPH_PAD apart until none is (or give up),
// each step kept inside the frame.
function separate(N, W, H) {
  for (let round = 0; round < 200; round++) {
    let moved = false;
    for (let i = 0; i < N.length; i++) {
      for (let j = i + 1; j < N.length; j++) {
        const a = N[i], b = N[j], push = overlapOf(a, a.x, a.y, b, b.x, b.y);
        if (!push) continue;
        moved = true;
        const [dx, dy] = push;
        const ka = a.fx == null ? (b.fx == null ? 0.5 : 1) : 0, kb = b.fx == null ? 1 - ka : 0;
        a.x -= dx * ka; a.y -= dy * ka; b.x += dx * kb; b.y += dy * kb;
        clamp(a, W, H); clamp(b, W, H);
      }
    }
    if (!moved) break;
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

function layoutTags(nodes, links, W, H, minH) {
  const N = nodes.map((d, i) => {
    const ring = nodes.filter((x) => x.hops === d.hops), k = ring.indexOf(d);
    const a = (2 * Math.PI * k) / Math.max(ring.length, 1) + d.hops * 0.5;
    const r = d.hops * Math.min(W, H) * 0.2;
    const n = { tag: d.tag, box: d.box, x: W / 2 + r * Math.cos(a), y: H / 2 + r * Math.sin(a) };
    if (d.hops === 0) { n.fx = W / 2 - (d.box.l + d.box.r) / 2; n.fy = H / 2; }
    return n;
  });
  const sim = d3.forceSimulation(N).stop()
    .force("link", d3.forceLink(links.map((l) => ({ ...l }))).id((d) => d.tag)
      .distance((l) => 30 + 40 * (1 - l.weight)))
    .force("charge", d3.forceManyBody().strength(-160))
    .force("x", d3.forceX(W / 2).strength(0.04))
    .force("y", d3.forceY(H / 2).strength(0.04 * W / H))
    .force("boxes", forceBoxes(0.6));
  for (let t = 0, n = Math.ceil(Math.log(sim.alphaMin()) / Math.log(1 - sim.alphaDecay())); t < n; t++) {
    sim.tick();
    for (const d of N) clamp(d, W, H);
  }
  const drawnH = spread(N, W, minH);
  separate(N, W, drawnH);
  return { N, H: drawnH, left: overlaps(N) };
}

// The <svg> of a tag neighbourhood (the /v1/tags/{tag}/graph answer) drawn `width` units wide
// (the page's width in CSS px, so labels are drawn at their CSS size); pick(tag) on a click.
// The frame's height is the drawing's own. A drawing with boxes still overlapping is redrawn
// in a taller frame; data-overlaps on the <svg> says how many pairs the last one left (0).
function tagGraphSvg(g, width, pick) {
  const maxDf = Math.max(1, ...g.nodes.map((d) => d.memories));
  const sizes = measureLabels(g.nodes.map((d) => d.tag));
  const nodes = g.nodes.map((d, i) => {
    const r = 5 + 13 * Math.sqrt(d.memories / maxDf), z = sizes[i];
    return { ...d, r, label: z,
             box: { l: -r, r: r + GRAPH_GAP + z.w, t: Math.min(-r, -z.h / 2), b: Math.max(r, z.h / 2) } };
  });
  // at least as wide as the widest tag (a 64-character tag on a phone): then scaled down
  const W = Math.max(width, ...nodes.map((d) => Math.ceil(d.box.r - d.box.l + 2 * GRAPH_PAD)));
  const known = new Set(nodes.map((d) => d.tag));
  const links = [...g.edges.map((e) => ({ source: e.a, target: e.b, weight: e.weight })),
                 ...g.subtypes.map((st) => ({ source: st.child, target: st.parent, weight: 0.5 }))]
    .filter((l) => known.has(l.source) && known.has(l.target) && l.source !== l.target);
  // Start about as tall as the boxes need; a drawing that can't hold them all apart is redrawn
  // taller.
  const area = nodes.reduce((sum, d) => sum + (d.box.r - d.box.l + GRAPH_PAD) * (d.box.b - d.box.t + GRAPH_PAD), 0);
  const minH = Math.min(360, W * 0.6);
  let H = Math.round(Math.max(W * 0.5, Math.min(W * 0.65, (4 * area) / W), minH)), placed;
  for (let attempt = 0; attempt < GRAPH_TRIES; attempt++) {
    placed = layoutTags(nodes, links, W, H, minH);
    if (!placed.left) break;
    H = Math.round(H * 1.2);
  }
  const P = placed.N, at = new Map(P.map((d) => [d.tag, d]));
  H = placed.H;
  const svg = s("svg", { class: "graph", id: "tag-graph", viewBox: `0 0 ${W} ${H}`, role: "img",
                         "aria-label": `tags around ${g.tag}`, "data-overlaps": placed.left });
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
  nodes.forEach((d, i) => {
    const p = P[i];
    const node = s("g", { class: "node", "data-tag": d.tag, tabindex: 0, onclick: () => pick(d.tag) },
      s("circle", { cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: d.r.toFixed(1),
                    class: d.hops === 0 ? "centre" : d.hops > 1 ? "hop2" : "hop1" }),
      s("text", { x: (p.x + d.r + GRAPH_GAP).toFixed(1), y: (p.y - d.label.top - d.label.h / 2).toFixed(1) },
        d.tag),
      s("title", {}, `${d.tag}: ${d.memories} memories, ${d.hops} hop(s) away`));
    node.addEventListener("keydown", (ev) => { if (ev.key === "Enter") pick(d.tag); });
    svg.appendChild(node);
  });
  return svg;
}
