// The sessions board: one card per pane, pushed over a websocket (never polled).
// Everything from a pane (names, prompts, screen text) is untrusted: it only ever goes into
// textContent, never into HTML. Keyboard navigation: keys.js.

import { setupKeys } from "./keys.js";

const STATES = ["blocked", "unreachable", "working", "idle", "exited"];  // core/states.py URGENCY
const NOT_AGENT = ["view", "other"];  // core/panekind.py: kinds of pane that hold no agent

// A card that stands for an agent (board/model.py stands_for_agent): counted, notified, answered. A view of
// another pane and another program (a shell, a pager) are shown in one line each, after the agents.
export function standsForAgent(card) {
  return !NOT_AGENT.includes(card.kind) && !card.demo;
}
const RECONNECT_MAX = 5000;

const cards = new Map();   // id -> card (as the daemon sent it)
const nodes = new Map();   // id -> card element
const ui = new Map();      // id -> {pending, reporting, message, busy}: what the user is doing on a card
const lastNotified = new Map();
const pendingReplies = new Map();
const renderLog = [];      // {id, state, since, shown}: when a state reached the screen (benchmarks read it)
let notifyCooldown = 30;
let ws = null;
let rid = 0;
let failures = 0;
let firstLoad = true;
let view = null;           // the terminal view module, loaded on first use

// For tests and benchmarks: the state, and `answer`, which confirms exactly like the Confirm button
// (with the fingerprint the caller saw, e.g. a stale one, as when the prompt changes in flight).
// choose / confirm / cancel are what clicking an option, Confirm and Cancel do (keys.js calls them).
window.panewatchBoard = {
  cards, nodes, renderLog, send, request, refreshStats,
  answer(id, number, fingerprint) {
    uiState(id).pending = { number, label: `option ${number}`, fingerprint };
    return confirmAnswer(id);
  },
  choose, cancel,
  confirm(id) {
    if (!ui.get(id)?.pending) return false;
    confirmAnswer(id);
    return true;
  },
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

export function duration(seconds) {
  seconds = Math.max(0, Math.floor(seconds));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(seconds / 3600)}h ${String(Math.floor(seconds / 60) % 60).padStart(2, "0")}m`;
}

function decidedBy(card) {
  const source = card.source || "screen";
  if (source === "screen") return card.rule ? `rule ${card.rule}` : "screen (no rule matched)";
  return card.detail ? `${source}: ${card.detail}` : source;
}

function shortPath(path) {
  return (path || "").replace(/^\/(home\/[^/]+|root)(?=\/|$)/, "~");
}

// -- the websocket --------------------------------------------------------------------------------

function connect() {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  setConn("connecting", "connecting…");
  ws.onopen = () => {
    failures = 0;
    setConn("live", "live");
    if (view) view.reopen();
    refreshStats();
  };
  ws.onmessage = (event) => {
    if (typeof event.data !== "string") {
      if (view) view.frame(event.data);
      return;
    }
    const msg = JSON.parse(event.data);
    if (msg.op === "cards") queueCards(msg);
    else if (msg.op === "result") onResult(msg);
    else if (msg.op === "hello") notifyCooldown = msg.cooldown ?? notifyCooldown;
  };
  ws.onclose = () => {
    ws = null;
    for (const [, reject] of pendingReplies) reject({ ok: false, error: "disconnected", message: "connection lost" });
    pendingReplies.clear();
    failures += 1;
    setConn("down", "reconnecting…");
    if (failures >= 2) checkSignedIn();
    setTimeout(connect, Math.min(RECONNECT_MAX, 250 * 2 ** failures));
  };
}

async function checkSignedIn() {
  try {
    const response = await fetch("/api/cards", { credentials: "same-origin" });
    if (response.status === 401 || response.status === 403) {
      setConn("down", "signed out");
      showBanner("This board's daemon restarted (or the link is old): run `panewatch board` for a new link.");
    }
  } catch {
    setConn("down", "daemon not reachable");
    showBanner("The panewatch daemon is not reachable. Start it with `panewatch serve` (or `panewatch board`).");
  }
}

function setConn(kind, text) {
  const node = $("conn");
  node.dataset.conn = kind;
  node.textContent = text;
  if (kind === "live") $("banner").hidden = true;
}

function showBanner(text) {
  const node = $("banner");
  node.textContent = text;
  node.hidden = false;
}

function send(msg) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
}

function request(msg) {
  return new Promise((resolve, reject) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      reject({ ok: false, error: "disconnected", message: "not connected to the daemon" });
      return;
    }
    const id = ++rid;
    pendingReplies.set(id, (reply) => (reply.ok ? resolve : reject)(reply));
    ws.send(JSON.stringify({ ...msg, rid: id }));
  });
}

function onResult(msg) {
  const settle = pendingReplies.get(msg.rid);
  if (settle) {
    pendingReplies.delete(msg.rid);
    settle(msg);
  }
}

// -- cards ----------------------------------------------------------------------------------------

// Batches are applied once per animation frame: however many arrive, the page lays out once.
let queued = [];
function queueCards(msg) {
  msg.received = Date.now();
  if (!queued.length) requestAnimationFrame(flushCards);
  queued.push(msg);
}

function flushCards() {
  const batch = queued;
  queued = [];
  const changed = [];
  for (const msg of batch) applyCards(msg, changed);
  reorder();
  summarize();
  keys.cardsChanged();
  const shown = Date.now();
  for (const entry of changed) entry.shown = shown;  // the frame that paints them
}

function applyCards(msg, changed) {
  if (msg.full) {
    for (const id of [...cards.keys()]) if (!msg.cards.some((c) => c.id === id)) removeCard(id);
  }
  for (const card of msg.cards) {
    const old = cards.get(card.id);
    cards.set(card.id, card);
    reconcile(card, old);
    renderCard(card);
    if (!old || old.state !== card.state) {
      const entry = { id: card.id, state: card.state, since: card.since, sent: msg.t ?? null, received: msg.received, shown: null };
      changed.push(entry);
      renderLog.push(entry);
      if (renderLog.length > 20000) renderLog.splice(0, 10000);
      if (card.state === "blocked" && !firstLoad && (!old || old.state !== "blocked") && standsForAgent(card)) notify(card);
      if (old && (old.state === "blocked" || old.state === "idle")) scheduleStats();  // a wait may have ended
    }
  }
  for (const id of msg.gone) {
    removeCard(id);
    if (view) view.gone(id);
  }
  firstLoad = false;
  if (view) view.cardChanged(msg.cards);
}

// A confirmation is bound to the prompt the user saw: if that prompt changed or went away, drop it.
function reconcile(card, old) {
  const state = ui.get(card.id);
  if (!state || !state.pending) return;
  const fingerprint = card.prompt ? card.prompt.fingerprint : null;
  if (card.state !== "blocked") {
    state.pending = null;
    state.message = { kind: "warn", text: "The prompt went away before you confirmed; nothing was sent." };
  } else if (fingerprint !== state.pending.fingerprint) {
    state.pending = null;
    state.message = { kind: "warn", text: "The prompt changed before you confirmed; nothing was sent. Check the new prompt." };
  }
}

function removeCard(id) {
  cards.delete(id);
  ui.delete(id);
  const node = nodes.get(id);
  if (node) node.remove();
  nodes.delete(id);
}

function uiState(id) {
  if (!ui.has(id)) ui.set(id, { pending: null, reporting: null, message: null, busy: false });
  return ui.get(id);
}

function place(card) {
  if (card.where) return card.where;  // a hook-only pane (board/hookonly.py): its terminal, tty and directory
  const where = card.target ? (card.window ? `${card.target} [${card.window}]` : card.target) : "";
  return [where, shortPath(card.cwd || "")].filter(Boolean).join(" · ");
}

// A view or another program: one line, no prompt, no buttons (nothing there waits on the user).
function renderLine(card) {
  const text = card.kind === "view"
    ? `view of ${card.view_of ? "#" + card.view_of : "another pane"}${card.shows ? " (" + card.shows + ")" : ""}`
    : `${card.what || "a program"}: no agent`;
  const node = nodes.get(card.id) || el("article", { "data-id": card.id });
  nodes.set(card.id, node);
  if (!node.parentNode) $("cards").append(node);
  node.className = `card card-line kind-${card.kind} state-${card.state}`;
  node.dataset.state = card.state;
  node.replaceChildren(el("span", { class: "pane-id", text: `#${card.id}` }), el("span", { class: "line-text", text }),
    el("span", { class: "cwd", text: place(card), title: card.cwd || "" }));
  applyFilter(node, card);
}

function renderCard(card) {
  if (!standsForAgent(card)) {
    renderLine(card);
    return;
  }
  const state = uiState(card.id);
  const since = el("span", { class: "since", "data-since": card.since, text: duration(Date.now() / 1000 - card.since) });
  const head = el("div", { class: "card-head" },
    el("span", { class: "badge", text: card.state.toUpperCase() }),
    el("span", { class: "name", text: card.name || card.id, title: card.command }),
    el("span", { class: "pane-id", text: `#${card.id}` }),
    el("span", { class: "agent", text: card.agent || "no agent" }),
    since);
  const meta = el("div", { class: "meta" },
    el("span", { class: "cwd", text: place(card), title: card.cwd }),
    el("span", { class: "decided", text: decidedBy(card) }));
  const body = [head, meta];
  if (card.answer && !state.message) {  // the last answer (from here, the CLI or `top`), confirmed or not
    body.push(el("div", { class: `answer-outcome outcome-${card.answer.applied ? "ok" : "error"}`, role: "status",
      text: `Last answer ${card.answer.option}. ${card.answer.label || ""}: ${card.answer.outcome}` }));
  }
  // The agent's version is not one its manifest was verified on: said, the verdict is unchanged.
  if (card.unverified) body.push(el("div", { class: "unverified", role: "note", text: card.unverified }));
  if (card.state === "blocked") body.push(renderPrompt(card, state));
  if (state.reporting) body.push(renderReport(card, state));
  if (card.state === "unreachable") {
    body.push(el("div", { class: "message message-warn", role: "status",
      text: `Host unreachable: ${card.detail || "the link is down"}. What the pane shows now is unknown; nothing can be sent until it is back.` }));
  }
  if (state.message) body.push(el("div", { class: `message message-${state.message.kind}`, role: "status", text: state.message.text }));
  const actions = el("div", { class: "actions" });
  if (card.origin === "hooks") {  // known by its hooks only (board/hookonly.py): no screen here, its terminal has it
    actions.append(el("button", { type: "button", class: "goto", text: "Go there", title: card.where || "",
      onclick: () => request({ op: "goto", pane: card.id })
        .then(() => say(card.id, "ok", `Shown in ${card.terminal || "its terminal"}`), (e) => say(card.id, "error", e.message)) }));
  } else {
    actions.append(el("button", { type: "button", class: "open-view", onclick: () => openView(card.id), text: "Terminal" }));
    actions.append(el("button", { type: "button", class: "report-wrong", text: "This state is wrong",
      title: "save this pane's recent history as a golden case (panewatch report-wrong)",
      onclick: () => { state.reporting = { expected: "" }; state.message = null; renderCard(cards.get(card.id)); } }));
  }
  if (card.state === "exited") {
    actions.append(el("button", { type: "button", class: "dismiss", text: "Dismiss",
      onclick: () => request({ op: "dismiss", pane: card.id }).catch((e) => say(card.id, "error", e.message)) }));
  }
  body.push(actions);
  let node = nodes.get(card.id);
  if (!node) {
    node = el("article", { class: "card", "data-id": card.id });
    nodes.set(card.id, node);
    $("cards").append(node);
  }
  node.dataset.state = card.state;
  node.className = `card state-${card.state}`;
  node.replaceChildren(...body);
  applyFilter(node, card);
}

function renderPrompt(card, state) {
  const prompt = card.prompt || { question: "", options: [], fingerprint: "" };
  const box = el("div", { class: "prompt", "data-fingerprint": prompt.fingerprint },
    el("div", { class: "question", text: prompt.question || "(the question is not on screen)" }));
  if (prompt.body) box.append(el("div", { class: "prompt-body", text: prompt.body }));
  const options = el("div", { class: "options" });
  for (const option of prompt.options) {
    const chosen = state.pending && state.pending.number === option.number;
    options.append(el("button", {
      type: "button", class: `option kind-${option.kind}${chosen ? " chosen" : ""}`, "data-option": option.number,
      disabled: state.busy, text: `${option.number}. ${option.label}`, onclick: () => choose(card.id, option.number),
    }));
  }
  if (!prompt.options.length) {
    options.append(el("span", { class: "no-options", text: card.origin === "hooks"
      ? `Known from its hooks only: answer it in ${card.where || "its terminal"}.`
      : "No options found on screen: open the terminal to see it." }));
  }
  box.append(options);
  if (state.pending) {
    box.append(el("div", { class: "confirm", role: "alertdialog" },
      el("span", { text: `Answer “${state.pending.number}. ${state.pending.label}”?` }),
      el("button", { type: "button", class: "confirm-yes", onclick: () => confirmAnswer(card.id), text: "Confirm answer" }),
      el("button", { type: "button", class: "confirm-no", text: "Cancel", onclick: () => cancel(card.id) })));
  }
  return box;
}

// Choosing an option opens its confirmation (bound to the prompt shown now); nothing is typed yet.
function choose(id, number) {
  const card = cards.get(id);
  const state = uiState(id);
  const option = card && card.state === "blocked" && card.prompt && card.prompt.options.find((o) => o.number === number);
  if (!option || state.busy) return false;
  state.pending = { number: option.number, label: option.label, fingerprint: card.prompt.fingerprint };
  state.message = null;
  renderCard(card);
  return true;
}

function cancel(id) {
  const state = ui.get(id);
  if (!state || !state.pending) return false;
  state.pending = null;
  renderCard(cards.get(id));
  return true;
}

// "This state is wrong": confirmed, with the state the user says it is really in, like an answer.
function renderReport(card, state) {
  const picker = el("select", { class: "report-expected", "aria-label": "the state it is really in",
    onchange: (event) => { state.reporting.expected = event.target.value; } });
  picker.append(el("option", { value: "", text: "not sure", selected: state.reporting.expected === "" }));
  for (const name of STATES) {  // what the agent really does: "unreachable" is our link, not its state
    if (name !== card.state && name !== "unreachable") picker.append(el("option", { value: name, text: name, selected: state.reporting.expected === name }));
  }
  return el("div", { class: "report", role: "alertdialog", "aria-label": "report this state as wrong" },
    el("span", { text: `Save this pane's recent history as a test case? panewatch says ${card.state}; it is really` }),
    picker,
    el("button", { type: "button", class: "report-yes", text: "Save report", onclick: () => saveReport(card.id) }),
    el("button", { type: "button", class: "report-no", text: "Cancel",
      onclick: () => { state.reporting = null; renderCard(cards.get(card.id)); } }));
}

async function saveReport(id) {
  const state = uiState(id);
  const reporting = state.reporting;
  if (!reporting) return;
  state.reporting = null;
  state.message = { kind: "info", text: "Saving the report…" };
  renderCard(cards.get(id));
  try {
    const reply = await request({ op: "report_wrong", pane: id, expected: reporting.expected || null });
    state.message = { kind: "ok", text: `Saved (secrets masked): ${reply.path}` };
  } catch (reply) {
    state.message = { kind: "error", text: `Not saved: ${reply.message || reply.error}` };
  }
  if (cards.has(id)) renderCard(cards.get(id));
}

async function confirmAnswer(id) {
  const state = uiState(id);
  const pending = state.pending;
  if (!pending) return;
  state.pending = null;
  state.busy = true;
  state.message = { kind: "info", text: `Sending ${pending.number}. ${pending.label}…` };
  renderCard(cards.get(id));
  try {
    const reply = await request({ op: "answer", pane: id, option: String(pending.number), fingerprint: pending.fingerprint });
    // Confirmed: the dialog left and the agent went on (runtime/guard.py), or not, and what is on screen.
    state.message = reply.applied
      ? { kind: "ok", text: `Answered ${pending.number}. ${pending.label}. ${capital(reply.outcome || "applied")}.` }
      : { kind: "error", text: `Typed ${pending.number}. ${pending.label}, but ${reply.outcome || "not applied: the prompt is still on screen"}.` };
  } catch (reply) {
    state.message = { kind: "error", text: refusal(reply) };
  }
  state.busy = false;
  if (cards.has(id)) renderCard(cards.get(id));
}

function capital(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

function refusal(reply) {
  if (reply.error === "prompt_changed") return "Refused: the prompt changed since you saw it. Nothing was typed; check the new prompt.";
  if (reply.error === "not_blocked") return "Refused: the pane is no longer waiting on this prompt. Nothing was typed.";
  if (reply.error === "pane_busy") return "Refused: the pane is busy changing. Nothing was typed; try again in a moment.";
  if (reply.error === "not_an_agent") return `Refused: ${reply.message}`;
  return `Refused: ${reply.message || reply.error}`;
}

function say(id, kind, text) {
  uiState(id).message = { kind, text };
  if (cards.has(id)) renderCard(cards.get(id));
}

// A stable rank per card (state first, then longest waiting): one card's change moves one card,
// so the grid is not re-laid out card by card on every update.
const EPOCH = Math.floor(Date.now() / 1000) - 50_000_000;
function reorder() {
  for (const card of cards.values()) {
    const node = nodes.get(card.id);
    const waited = Math.min(99_999_999, Math.max(0, Math.floor(card.since) - EPOCH));
    const group = standsForAgent(card) ? 0 : (card.kind === "view" ? 1 : 2);  // agents first, then views, then others
    const rank = String(group * 1_000_000_000 + Math.max(0, STATES.indexOf(card.state)) * 100_000_000 + waited);
    if (node && node.style.order !== rank) node.style.order = rank;
  }
}

function summarize() {
  const counts = Object.fromEntries(STATES.map((s) => [s, 0]));
  for (const card of cards.values()) if (standsForAgent(card)) counts[card.state] = (counts[card.state] || 0) + 1;
  const parts = STATES.filter((s) => counts[s]).map((s) => el("span", { class: `count count-${s}`, text: `${counts[s]} ${s}` }));
  $("summary").replaceChildren(...parts);
  $("empty").hidden = cards.size > 0;
  document.title = counts.blocked ? `(${counts.blocked}) ${counts.blocked === 1 ? "pane needs" : "panes need"} you · panewatch` : "panewatch board";
}

function tick() {
  const now = Date.now() / 1000;
  for (const node of document.querySelectorAll(".since")) node.textContent = duration(now - Number(node.dataset.since));
}

// -- minutes lost waiting: a header figure and a bar per day (plain SVG) -------------------------------

const SVG = "http://www.w3.org/2000/svg";
const CHART_DAYS = 7;
let statsTimer = null;

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child);
  return node;
}

function localDay(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

function scheduleStats() {
  clearTimeout(statsTimer);
  // One question per burst of changes; and once more a little later: a write the database refuses
  // (another process holding its lock) turns recording off only after the writer gave up waiting.
  statsTimer = setTimeout(() => refreshStats().then(() => { statsTimer = setTimeout(refreshStats, 4000); }), 1000);
}

function refreshStats() {
  const since = Math.floor(Date.now() / 1000) - CHART_DAYS * 86400;
  request({ op: "status" }).then(renderStatus, () => {});
  return request({ op: "stats", since }).then(renderStats, () => {});
}

// What is not watched (tmux servers or sessions skipped and why, hosts whose link is down) and notifications
// that cannot reach the user: one line each, above the cards.
function renderStatus(status) {
  const lines = [...(status.notes || [])];
  for (const [host, link] of Object.entries(status.hosts || {})) {
    if (link.link === "down") lines.push(`host ${host}: link down, retrying — ${link.error || "no answer"}`);
  }
  for (const backend of status.notify || []) {
    if (!backend.ok) lines.push(`notifications: ${backend.backend} cannot deliver: ${backend.how}`);
  }
  $("notes").replaceChildren(...lines.map((line) => el("div", { class: "note", role: "note", text: line })));
  $("notes").hidden = !lines.length;
}

function renderStats(summary) {
  const byDay = new Map(summary.days.map((d) => [d.day, d]));
  const empty = { blocked: { seconds: 0, count: 0 }, idle: { seconds: 0, count: 0 } };
  const days = [];
  for (let i = CHART_DAYS - 1; i >= 0; i--) {
    const day = localDay(new Date(Date.now() - i * 86400000));
    days.push({ day, ...(byDay.get(day) || empty) });
  }
  const today = days[days.length - 1];
  const most = Math.max(60, ...days.map((d) => d.blocked.seconds + d.idle.seconds));
  const W = 8, GAP = 3, H = 22;
  const chart = svg("svg", { class: "waits-chart", width: CHART_DAYS * (W + GAP), height: H, role: "img",
    "aria-label": `minutes lost waiting, the last ${CHART_DAYS} days` });
  days.forEach((d, i) => {
    const x = i * (W + GAP);
    const hb = Math.round((d.blocked.seconds / most) * (H - 2));
    const hi = Math.round((d.idle.seconds / most) * (H - 2));
    const bar = svg("g", { class: "bar", "data-day": d.day, "data-blocked": d.blocked.seconds, "data-idle": d.idle.seconds },
      svg("title", {}, `${d.day}: blocked ${duration(d.blocked.seconds)} (${d.blocked.count}), idle ${duration(d.idle.seconds)} (${d.idle.count})`),
      svg("rect", { class: "bar-base", x, y: H - 1, width: W, height: 1 }),
      svg("rect", { class: "bar-blocked", x, y: H - 1 - hb, width: W, height: hb }),
      svg("rect", { class: "bar-idle", x, y: H - 1 - hb - hi, width: W, height: hi }));
    chart.append(bar);
  });
  const node = $("waits");
  node.replaceChildren(
    el("span", { text: "lost waiting today:" }),
    el("span", { class: "waits-blocked", text: `blocked ${duration(today.blocked.seconds)}`,
      title: `${today.blocked.count} prompts answered; the longest took ${duration(today.blocked.longest || 0)}` }),
    el("span", { class: "waits-idle", text: `idle ${duration(today.idle.seconds)}`,
      title: `${today.idle.count} turns ended before the next prompt` }),
    chart);
  const off = summary.recording_off;
  if (summary.recording === false && off) {
    // The daemon cannot write the waits (locked, full, read-only, another daemon records): say so, and since when.
    const since = new Date(off.since * 1000);
    const at = localDay(since) === localDay(new Date()) ? since.toLocaleTimeString() : since.toLocaleString();
    node.append(el("span", { class: "waits-off", role: "status", text: `not recording since ${at}`,
      title: `${off.why}` + (off.pending ? ` · ${off.pending} waits kept, written when it works again` : "")
        + (off.dropped ? ` · ${off.dropped} not recorded` : "") }));
  }
  node.hidden = false;
}

// -- filter, notifications, terminal view ---------------------------------------------------------

function applyFilter(node, card) {
  const words = $("filter").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const hay = [card.name, card.agent, card.cwd, card.state, card.id, card.command, card.target, card.window, card.what]
    .join(" ").toLowerCase();
  node.hidden = !words.every((w) => hay.includes(w));
}

function notify(card) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  const now = Date.now();
  if (now - (lastNotified.get(card.id) || 0) < notifyCooldown * 1000) return;
  lastNotified.set(card.id, now);
  const question = card.prompt && card.prompt.question ? card.prompt.question : "waiting for you";
  const note = new Notification(`${card.name || card.id} is blocked`, { body: `${card.agent || "agent"}: ${question}`, tag: `panewatch-${card.id}` });
  note.onclick = () => { window.focus(); keys.select(card.id); };
}

function setupNotifications() {
  const button = $("notify");
  if (!("Notification" in window) || Notification.permission !== "default") return;
  button.hidden = false;
  button.onclick = async () => {
    await Notification.requestPermission();
    button.hidden = Notification.permission !== "default";
  };
}

async function openView(id) {
  if (!view) view = await import("./term.js");
  view.open(id, { cards, send, request });
}

const keys = setupKeys(window.panewatchBoard);
$("filter").addEventListener("input", () => { for (const [id, node] of nodes) applyFilter(node, cards.get(id)); });
setupNotifications();
setInterval(tick, 1000);
setInterval(refreshStats, 60000);
connect();
