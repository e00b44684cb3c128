// hopgraph's explorer: everything it shows comes from the JSON in <script id="data">; no network.
// The page's state lives in the URL's hash (q, ds, type, cell, pair, text), so a link reopens a view.
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") node.addEventListener("click", v);
    else node.setAttribute(k, v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
};

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return Object.fromEntries(params.entries());
}
function setHash(changes) {
  const state = { ...readHash(), ...changes };
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v) params.set(k, v);
  location.hash = params.toString();
}

function table(header, rows, sortable) {
  const body = el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell) => el("td", {}, cell)))));
  const head = el("tr", {}, header.map((name, i) =>
    el("th", sortable ? { onclick: () => sortBy(body, i), title: "sort" } : {}, name)));
  return el("table", {}, el("thead", {}, head), body);
}
function sortKey(text) {
  const number = parseFloat(String(text).replace(/[,*]/g, ""));
  return Number.isNaN(number) ? String(text) : number;
}
function sortBy(body, column) {
  const rows = [...body.rows];
  const descending = body.dataset.sorted !== String(column);
  rows.sort((a, b) => {
    const x = sortKey(a.cells[column].textContent), y = sortKey(b.cells[column].textContent);
    const order = x < y ? -1 : x > y ? 1 : 0;
    return descending ? -order : order;
  });
  body.dataset.sorted = descending ? String(column) : "";
  body.append(...rows);
}

function passage(ref) {
  const known = DATA.passages[ref.id] || {};
  return { ...known, ...ref };
}
function passageView(item, goldIds) {
  const full = passage(item);
  const gold = goldIds.has(full.id);
  const text = full.text || "";
  return el("div", { class: gold ? "passage gold" : "passage" },
    el("span", { class: "meta" }, `hop ${full.hop ?? "?"} · ${Number(full.score ?? 0).toFixed(3)} · `),
    gold ? el("span", { class: "mark" }, "gold ") : null,
    el("b", {}, full.title || full.doc_id || full.id), " ",
    el("details", {}, el("summary", {}, text.slice(0, 120) + (text.length > 120 ? " …" : "")), text));
}
const PASSAGE_KEYS = ["evidence", "gathered", "ranked"];
// A step's other values, whatever the method: sub-questions, memories and reasoning sentences (lists of
// text) one a line; TreeHop's tree, BiQOG's walk, ChainRAG's solved sub-questions (lists of records) one
// record a line as "key: value" pairs; a record (a metadata filter, statistics) as its pairs.
function pairs(record) {
  return Object.entries(record).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ");
}
function valueView(value) {
  if (Array.isArray(value)) {
    return el("ol", { class: "value" }, value.map((item) =>
      el("li", {}, item !== null && typeof item === "object" ? pairs(item) : String(item))));
  }
  if (value !== null && typeof value === "object") return el("span", { class: "value" }, pairs(value));
  return el("span", { class: "value" }, String(value));
}
function stepView(step, goldIds) {
  const parts = [el("div", { class: "node" }, step.node)];
  for (const [key, value] of Object.entries(step.update)) {
    if (key === "usage") {
      for (const u of value) parts.push(el("div", { class: "llm" },
        `LLM ${u.role}: ${u.calls} call, ${u.prompt_tokens} prompt (${u.cached_tokens} reused), ` +
        `${u.completion_tokens} completion, ${Number(u.seconds).toFixed(2)} s` +
        (u.cache_hits ? " (response cache)" : "") + (u.echoes ? `, ${u.echoes} echo(es)` : "")));
    } else if (PASSAGE_KEYS.includes(key) && Array.isArray(value)) {
      parts.push(el("div", { class: "key" }, `${key} (${value.length})`));
      for (const item of value) parts.push(passageView(item, goldIds));
    } else {
      parts.push(el("div", { class: "key" }, `${key}: `, valueView(value)));
    }
  }
  return el("div", { class: "step" }, parts);
}

// The refusal check a reader ran on its own refusal: its verdict, and each fact it named, stated or not.
function checkView(check) {
  return el("div", { class: "check" },
    el("p", {}, `Refusal checked: ${check.verdict}`),
    el("ul", {}, check.facts.map((f) =>
      el("li", { class: f.stated ? "stated" : "missing" }, f.stated ? "stated: " : "missing: ", f.fact))));
}

function questionView(key) {
  const q = DATA.questions.find((item) => item.key === key);
  if (!q) return el("p", {}, `No question ${key} in this page.`);
  const goldIds = new Set(q.gold_passages);
  const methods = Object.entries(q.results).map(([method, r]) =>
    el("section", { class: "method" },
      el("h3", {}, method, " ", el("span", { class: r.em ? "right" : "wrong" },
        r.em ? "right" : "wrong"), ` F1 ${(100 * r.f1).toFixed(1)} · ${r.cell}`),
      el("p", {}, "Answer: ", el("b", { class: "answer" }, r.prediction), r.outcome ? ` (${r.outcome})` : ""),
      r.sentence ? el("p", { class: "sentence" }, `Cut (${r.shortening}) from the reply: `, el("q", {}, r.sentence)) : null,
      r.check ? checkView(r.check) : null,
      r.fallbacks.length ? el("ul", { class: "fallbacks" }, r.fallbacks.map((f) => el("li", {}, f))) : null,
      el("div", { class: "steps" }, r.steps.map((step) => stepView(step, goldIds)))));
  return el("div", { id: "question", "data-key": q.key },
    el("h2", {}, q.question),
    el("p", {}, `${q.dataset} · ${q.type || "no type"} · ${q.hops ?? "–"} hop(s) · gold: `,
      el("b", {}, q.gold_answers.join(" | "))),
    el("h3", {}, "Gold evidence"),
    el("ul", {}, q.gold.map((g) => el("li", { class: "gold-evidence" }, el("b", {}, g.title), " ", g.text))),
    el("div", { class: "methods" }, methods));
}

function matches(q, state) {
  if (state.ds && q.dataset !== state.ds) return false;
  if (state.type && q.type !== state.type) return false;
  if (state.cell) {
    const [method, cell] = state.cell.split(":");
    if (!q.results[method] || q.results[method].cell !== cell) return false;
  }
  if (state.pair) {
    const [a, b] = state.pair.split(",");
    if (!q.results[a] || !q.results[b] || !q.results[a].em || q.results[b].em) return false;
  }
  if (state.text && !JSON.stringify([q.question, q.gold_answers]).toLowerCase().includes(state.text.toLowerCase()))
    return false;
  return true;
}

function select(name, label, options, value) {
  const box = el("select", { id: `filter-${name}` }, el("option", { value: "" }, `any ${label}`),
    options.map(([v, text]) => el("option", v === value ? { value: v, selected: "" } : { value: v }, text)));
  box.addEventListener("change", () => setHash({ [name]: box.value, q: "" }));
  return box;
}

function render() {
  const started = performance.now();
  const state = readHash();
  const list = DATA.questions.filter((q) => matches(q, state));
  const types = [...new Set(DATA.questions.map((q) => q.type).filter(Boolean))].sort();
  const pairs = DATA.methods.flatMap((a) => DATA.methods.filter((b) => b !== a).map((b) => [`${a},${b}`, `${a} right, ${b} wrong`]));
  const cells = DATA.methods.flatMap((m) => DATA.cells.map((c) => [`${m}:${c}`, `${m}: ${c}`]));
  const text = el("input", { id: "filter-text", placeholder: "text in question or answer", value: state.text || "" });
  text.addEventListener("change", () => setHash({ text: text.value, q: "" }));
  const filters = el("div", { class: "filters" },
    select("ds", "dataset", DATA.datasets.map((d) => [d, d]), state.ds),
    select("type", "type", types.map((t) => [t, t]), state.type),
    select("cell", "error cell", cells, state.cell),
    select("pair", "pair", pairs, state.pair), text,
    el("span", { id: "count" }, `${list.length} of ${DATA.questions.length} questions`));
  const rows = list.map((q) => el("li", {},
    el("a", { href: "#" + new URLSearchParams({ ...state, q: q.key }).toString(), class: "qlink" },
      `${q.dataset} · ${q.question}`)));
  $("#browse").replaceChildren(filters, el("ul", { id: "questions" }, rows));
  $("#detail").replaceChildren(state.q ? questionView(state.q) : el("p", {}, "Pick a question."));
  document.body.dataset.renderMs = (performance.now() - started).toFixed(1);  // read by benchmarks/
}

function init() {
  $("#board").replaceChildren(table(DATA.board.header, DATA.board.rows, true));
  $("#errors").replaceChildren(table(DATA.errors.header, DATA.errors.rows, true));
  window.addEventListener("hashchange", render);
  render();
  document.body.dataset.ready = "yes";
  document.body.dataset.readyMs = performance.now().toFixed(1);  // since navigation started
}
init();
