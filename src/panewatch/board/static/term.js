// The live terminal view of one pane (xterm.js, loaded only when a view is first opened).
// Frames: 4-byte view generation, 1 byte kind (0 repaint, 1 output), then the pane's bytes.
// Typing is sent only while the pane is interactive; a blocked pane is answered with the card's
// buttons (the daemon refuses keys then anyway). One keys request at a time: the daemon's guard
// waits for what each write caused to settle before the next, so keys typed meanwhile go together
// in the next request (as a terminal's type-ahead would) instead of queueing one by one.

import { Terminal } from "./vendor/xterm.mjs";
import { FitAddon } from "./vendor/addon-fit.mjs";

const css = document.createElement("link");
css.rel = "stylesheet";
css.href = "/static/vendor/xterm.css";
document.head.append(css);

const $ = (id) => document.getElementById(id);
let term = null;
let fit = null;
let pane = null;
let board = null;
let gen = 0;           // the generation being shown; frames of older ones are dropped
let interactive = false;
let typed = "";        // keys typed while the previous keys request is in flight
let sending = false;

export function open(id, api) {
  board = api;
  pane = id;
  gen = 0;
  const card = board.cards.get(id);
  if (!term) {
    term = new Terminal({ cols: card.cols, rows: card.rows, scrollback: 2000, fontSize: 13, cursorBlink: false,
      fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, monospace", theme: { background: "#0d1117" } });
    fit = new FitAddon();
    term.loadAddon(fit);
    term.open($("term"));
    term.onData((data) => { if (interactive && pane) { typed += data; sendKeys(); } });
    $("view-close").onclick = close;
    $("view-fit").onclick = () => {
      const size = fit.proposeDimensions();
      if (size && pane) board.request({ op: "resize", pane, cols: size.cols, rows: size.rows }).catch(() => {});
    };
  }
  term.reset();
  $("view").hidden = false;
  document.body.classList.add("viewing");
  update(card);
  board.send({ op: "view", pane: id });
  term.focus();
}

function sendKeys() {
  if (sending || !typed || !pane) return;
  const data = typed;
  typed = "";
  sending = true;
  board.request({ op: "keys", pane, data })
    .catch((reply) => {
      if (reply.error !== "disconnected") $("view-note").textContent = `not typed: ${reply.message || reply.error}`;
    })
    .finally(() => { sending = false; sendKeys(); });
}

export function reopen() {
  if (pane) { gen = 0; board.send({ op: "view", pane }); }
}

export function close() {
  if (board) board.send({ op: "unview" });
  pane = null;
  typed = "";
  $("view").hidden = true;
  document.body.classList.remove("viewing");
}

export function frame(buffer) {
  if (!pane || buffer.byteLength < 5) return;
  const head = new DataView(buffer);
  const frameGen = head.getUint32(0);
  const kind = head.getUint8(4);
  const data = new Uint8Array(buffer, 5);
  if (kind === 0 && frameGen > gen) {  // a (re)start of the view: the whole screen follows
    gen = frameGen;
    term.reset();
  } else if (frameGen !== gen) {
    return;
  }
  term.write(data);
}

export function cardChanged(changed) {
  for (const card of changed) if (card.id === pane) update(card);
}

export function gone(id) {
  if (id === pane) close();
}

function update(card) {
  interactive = Boolean(card.interactive);
  term.options.disableStdin = !interactive;
  if (term.cols !== card.cols || term.rows !== card.rows) term.resize(card.cols, card.rows);
  $("view-title").textContent = `${card.name || card.id} · #${card.id} · ${card.agent || "agent?"} · ${card.cols}×${card.rows}`;
  const note = $("view-note");
  note.dataset.state = card.state;
  note.textContent = card.state === "blocked" ? "BLOCKED: answer with the card's buttons (typing is off)"
    : card.state === "exited" ? "exited (read-only)" : "interactive: typing goes to the pane";
  $("view-fit").hidden = !["headless", "run"].includes(card.origin) || card.state === "exited";  // tmux: tmux's size
}
