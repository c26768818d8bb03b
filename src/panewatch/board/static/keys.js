// Keyboard navigation on the board. One card at a time is selected (aria-current, and focused):
//   j / ↓ / →   next card        k / ↑ / ←   previous card        b   next blocked pane (wraps around)
//   an option's key (its number, or its letter hint such as y or p) on a blocked card: opens that
//   option's confirmation, exactly as clicking it does (nothing is typed yet)
//   Enter       confirms the open confirmation        Esc   cancels it (else clears the selection)
//   /           the filter box
// Keys typed into the filter, a button (Enter/Space are its own) or the terminal view are never ours,
// and neither are keys with Ctrl, Alt or Meta. `#pane=ID` in the address selects that pane once it is
// on the board (a notification opens the board there).

const NEXT = { j: 1, ArrowDown: 1, ArrowRight: 1, k: -1, ArrowUp: -1, ArrowLeft: -1 };
const RESERVED = new Set(["j", "k", "b", "/"]);  // navigation wins over an option's letter hint

export function setupKeys(board) {
  let selected = null;  // a pane id
  let wanted = paneFromHash();  // a pane asked for by the address, selected when its card appears

  function ordered() {
    // The grid shows cards by CSS `order` (blocked first), ties in document order; sort() is stable.
    return [...document.querySelectorAll("#cards .card")].filter((node) => !node.hidden)
      .sort((a, b) => Number(a.style.order || 0) - Number(b.style.order || 0));
  }

  function select(id, { scroll = true } = {}) {
    for (const node of document.querySelectorAll(".card[aria-current]")) node.removeAttribute("aria-current");
    selected = id;
    const node = id === null ? null : board.nodes.get(id);
    if (!node) return;
    node.setAttribute("aria-current", "true");
    node.tabIndex = -1;
    node.focus({ preventScroll: true });
    if (scroll) node.scrollIntoView({ block: "nearest" });
  }

  function move(step, only = null) {
    const list = ordered().filter((node) => !only || node.dataset.state === only);
    if (!list.length) return;
    const at = list.findIndex((node) => node.dataset.id === selected);
    let next;
    if (at < 0) {
      // Nothing selected among these: start at the top (or, for `b`, the first blocked one after the selection).
      const all = ordered();
      const from = all.findIndex((node) => node.dataset.id === selected);
      next = only && from >= 0 ? (list.find((node) => all.indexOf(node) > from) || list[0]) : list[step > 0 ? 0 : list.length - 1];
    } else {
      next = list[(at + step + list.length) % list.length];
    }
    select(next.dataset.id);
  }

  function optionFor(card, key) {
    if (!card || card.state !== "blocked" || !card.prompt || RESERVED.has(key)) return null;
    return card.prompt.options.find((o) => String(o.number) === key)
      || card.prompt.options.find((o) => o.key.length === 1 && o.key.toLowerCase() === key.toLowerCase() && /[a-z]/i.test(o.key))
      || null;
  }

  function ours(event) {
    if (event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return false;
    const target = event.target;
    if (!(target instanceof Element)) return true;
    if (target.closest("input, textarea, select, [contenteditable], #view")) return false;
    if ((event.key === "Enter" || event.key === " ") && target.closest("button, a")) return false;
    return true;
  }

  document.addEventListener("keydown", (event) => {
    if (!ours(event)) return;
    const key = event.key;
    const card = selected === null ? null : board.cards.get(selected);
    let handled = true;
    if (key in NEXT) move(NEXT[key]);
    else if (key === "b") move(1, "blocked");
    else if (key === "/") document.getElementById("filter").focus();
    else if (key === "Enter") handled = card ? board.confirm(card.id) : false;
    else if (key === "Escape") {
      if (!card || !board.cancel(card.id)) select(null);
    } else {
      const option = optionFor(card, key);
      if (option) board.choose(card.id, option.number);
      else handled = false;
    }
    if (handled) event.preventDefault();
  });

  window.addEventListener("hashchange", () => { wanted = paneFromHash(); cardsChanged(); });

  // After every batch of cards: keep the selection on screen, or take the one the address asked for.
  function cardsChanged() {
    if (wanted !== null && board.nodes.has(wanted)) {
      const id = wanted;
      wanted = null;
      select(id, { scroll: false });
      board.nodes.get(id).scrollIntoView({ block: "center" });
    } else if (selected !== null && !board.nodes.has(selected)) {
      selected = null;
    } else if (selected !== null) {
      board.nodes.get(selected).setAttribute("aria-current", "true");
    }
  }

  return { select, cardsChanged, get selected() { return selected; } };
}

function paneFromHash() {
  const found = /^#pane=(.{1,400})$/.exec(location.hash);
  try {
    return found ? decodeURIComponent(found[1]) : null;
  } catch {
    return null;  // not percent-encoding: no such pane
  }
}
