// remd inspector: the page's DOM helpers (loaded first). Text goes in as text nodes only, never
// as HTML; text from a memory is isolated (dir="auto") and clipped in lists.
"use strict";

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  return append(el, children);
}

function enc(x) { return encodeURIComponent(x); }
function link(hash, ...children) { return h("a", { href: hash }, ...children); }
// Text from a memory (or any stored string) is isolated from the page around it (dir="auto":
// its own direction, and a U+202E inside it reverses nothing outside it).
function said(tag, attrs, text) { return h(tag, { ...attrs, dir: "auto" }, text); }
function memLink(ns, id, text, cls) {
  return said("a", { href: `#/ns/${enc(ns)}/m/${enc(id)}`, class: cls }, text || id);
}
function tagLink(ns, t, text) {
  return said("a", { href: `#/ns/${enc(ns)}/tags/${enc(t)}`, class: "tag" }, text || t);
}
function status(st) { return h("span", { class: `status status-${st}` }, st); }
function when(iso) { return iso ? iso.replace("T", " ").replace(/\.\d+\+00:00$/, " UTC") : "–"; }
function posix(t) { return t ? when(new Date(t * 1000).toISOString().replace("Z", "+00:00")) : "–"; }
function num(x, digits) {
  if (x === null || x === undefined) return "–";
  return typeof x === "number" && digits !== undefined ? x.toFixed(digits) : String(x);
}
// At most n code points of text (never half of a surrogate pair), "…" ending a cut.
function short(text, n) {
  let count = 0, end = 0, cut = 0;
  for (const ch of text) {
    if (++count > n) return text.slice(0, cut) + "…";
    if (count === n) cut = end; // n - 1 code points and the "…"
    end += ch.length;
  }
  return text;
}
function codePoints(text) { let n = 0; for (const _ of text) n++; return n; }

// A memory's text in a list: its first PREVIEW_LINES lines and PREVIEW_CHARS characters; the
// whole text is on the memory's page.
const PREVIEW_CHARS = 400, PREVIEW_LINES = 6;
function preview(ns, id, text) {
  const lines = text.split("\n", PREVIEW_LINES + 1);
  const head = lines.length > PREVIEW_LINES ? lines.slice(0, PREVIEW_LINES).join("\n") + "…" : text;
  const shown = short(head, PREVIEW_CHARS);
  if (shown === text) return [said("div", { class: "text" }, text)];
  return [said("div", { class: "text clipped" }, shown),
    h("div", { class: "meta" }, `${codePoints(text).toLocaleString("en")} characters in all: `,
      memLink(ns, id, "read the whole text", "whole"))];
}
