// app.js — the desk: state from the API, kept live by /api/events; and the
// switch between the desk, the servers dashboard (servers.js) and the Ask
// view (ask.js).
import { api, APIError, AuthError, setToken, token } from "./api.js";
import { connect } from "./events.js";
import { askView } from "./ask.js";
import { serversView } from "./servers.js";
import { $, el } from "./dom.js";
import { ago, clock, timeEl, refreshTimes } from "./time.js";

const state = {
  items: new Map(),      // id -> instruction
  agents: new Map(),     // agent_id -> agent
  settings: null,
  stream: null,
  editing: null,         // id of the strip being edited
  hidden: new Set(),     // ids deleted locally, awaiting undo
};
const CONSUMED_SHOWN = 200;

// ---- theme ---------------------------------------------------------------
function applyTheme(t) {
  if (t) document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
}
function currentTheme() {
  return document.documentElement.dataset.theme ||
    (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}
function toggleTheme() {
  const next = currentTheme() === "dark" ? "light" : "dark";
  localStorage.setItem("lm.theme", next);
  applyTheme(next);
}
applyTheme(localStorage.getItem("lm.theme"));

// ---- derived views -------------------------------------------------------
// The store's positions keep their order but go stale as the head is
// consumed, so the page numbers the rack itself.
const pending = () => [...state.items.values()]
  .filter((i) => i.status === "pending" && !state.hidden.has(i.id))
  .sort((a, b) => a.position - b.position)
  .map((i, idx) => { i.position = idx + 1; return i; });
const consumed = () => [...state.items.values()]
  .filter((i) => i.status === "consumed")
  .sort((a, b) => Date.parse(b.consumed_at) - Date.parse(a.consumed_at))
  .slice(0, CONSUMED_SHOWN);

function agentNow(a) {
  const now = Date.now();
  const waiting = !!a.waiting_until && now < Date.parse(a.waiting_until);
  const stale = (state.settings?.agent_stale_after_seconds ?? 30) * 1000;
  return { waiting, connected: waiting || now - Date.parse(a.last_seen_at) <= stale };
}
const agentsByRecency = () => [...state.agents.values()]
  .sort((a, b) => Date.parse(b.last_seen_at) - Date.parse(a.last_seen_at));

// ---- rendering -----------------------------------------------------------
function renderPending() {
  const list = $("pending");
  const items = pending();
  const focusedId = document.activeElement?.closest?.(".strip")?.dataset.id;
  const existing = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const keep = new Set(items.map((i) => i.id));
  for (const [id, li] of existing) if (!keep.has(id) && !li.classList.contains("consuming")) li.remove();
  items.forEach((item, idx) => {
    let li = existing.get(item.id);
    const sig = `${item.position}|${item.updated_at}|${state.editing === item.id}`;
    if (!li || li.dataset.sig !== sig) {
      const fresh = strip(item);
      fresh.dataset.sig = sig;
      if (li) { fresh.style.animation = "none"; li.replaceWith(fresh); } else list.append(fresh);
      li = fresh;
    }
    if (list.children[idx] !== li) list.insertBefore(li, list.children[idx]);
  });
  if (focusedId && state.editing !== focusedId) list.querySelector(`[data-id="${focusedId}"]`)?.focus();
  $("pending-empty").hidden = items.length > 0;
  $("pending-count").textContent = items.length;
  setTitle();
}

function setTitle() {
  const n = pending().length;
  document.title = `${n ? `(${n}) ` : ""}lm desk${view() === "desk" ? "" : ` · ${view()}`}`;
}

function strip(item) {
  const li = el("li", { className: "strip", tabIndex: 0 });
  li.dataset.id = item.id;
  li.setAttribute("aria-label", `Pending ${item.position}: ${item.content.slice(0, 80)}`);
  li.draggable = state.editing !== item.id;
  const pos = el("div", { className: "strip-pos", title: "Drag to reorder (or Alt+↑/↓)" }, String(item.position));
  pos.setAttribute("aria-hidden", "true");
  const body = el("div", { className: "strip-body" });
  if (state.editing === item.id) {
    const ta = el("textarea", { value: item.content });
    ta.setAttribute("aria-label", "Edit instruction");
    const err = el("span", { className: "form-error", role: "alert" });
    const save = el("button", { className: "btn btn-primary", type: "button", textContent: "Save" });
    const cancel = el("button", { className: "btn", type: "button", textContent: "Cancel" });
    const doSave = () => saveEdit(item.id, ta.value, err);
    save.onclick = doSave;
    cancel.onclick = () => { state.editing = null; renderPending(); li.focus(); };
    ta.onkeydown = (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); doSave(); }
      if (e.key === "Escape") { e.preventDefault(); cancel.onclick(); }
      e.stopPropagation();
    };
    body.append(el("div", { className: "strip-edit" }, ta,
      el("div", { className: "row" }, el("span", { className: "hint", textContent: "Ctrl+Enter saves · Esc cancels" }), err, cancel, save)));
    queueMicrotask(() => { ta.focus(); ta.setSelectionRange(ta.value.length, ta.value.length); });
  } else {
    body.append(el("p", { className: "strip-text", textContent: item.content }),
      el("div", { className: "meta" }, el("span", {}, "queued ", timeEl(item.created_at)),
        item.updated_at !== item.created_at ? el("span", {}, "edited ", timeEl(item.updated_at)) : null,
        el("span", { textContent: item.id.slice(-8).toLowerCase(), title: item.id })));
  }
  const act = (label, text, fn, cls = "") => {
    const b = el("button", { className: `act ${cls}`, type: "button", textContent: text, title: label });
    b.setAttribute("aria-label", label);
    b.onclick = (e) => { e.stopPropagation(); fn(); };
    return b;
  };
  const actions = el("div", { className: "strip-actions" });
  if (state.editing !== item.id) {
    actions.append(act("Move up", "↑", () => move(item, item.position - 1)),
      act("Move down", "↓", () => move(item, item.position + 1)),
      act("Edit", "edit", () => startEdit(item.id)),
      act("Delete", "delete", () => remove(item), "act-del"));
  }
  li.append(pos, body, actions);
  li.onkeydown = (e) => {
    if (e.target !== li) return;
    if (e.altKey && e.key === "ArrowUp") { e.preventDefault(); move(item, item.position - 1); }
    else if (e.altKey && e.key === "ArrowDown") { e.preventDefault(); move(item, item.position + 1); }
    else if (e.key === "Enter" || e.key === "e") { e.preventDefault(); startEdit(item.id); }
    else if (e.key === "Delete" || e.key === "Backspace") { e.preventDefault(); remove(item); }
    else if (e.key === "ArrowDown") { e.preventDefault(); li.nextElementSibling?.focus(); }
    else if (e.key === "ArrowUp") { e.preventDefault(); li.previousElementSibling?.focus(); }
  };
  dragAndDrop(li, item);
  return li;
}

function dragAndDrop(li, item) {
  li.addEventListener("dragstart", (e) => {
    e.dataTransfer.setData("text/x-lm-id", item.id);
    e.dataTransfer.effectAllowed = "move";
    li.classList.add("dragging");
  });
  li.addEventListener("dragend", () => li.classList.remove("dragging"));
  const side = (e) => (e.offsetY < li.offsetHeight / 2 ? "before" : "after");
  li.addEventListener("dragover", (e) => {
    if (!e.dataTransfer.types.includes("text/x-lm-id")) return;
    e.preventDefault();
    li.classList.toggle("drop-before", side(e) === "before");
    li.classList.toggle("drop-after", side(e) === "after");
  });
  li.addEventListener("dragleave", () => li.classList.remove("drop-before", "drop-after"));
  li.addEventListener("drop", (e) => {
    e.preventDefault();
    li.classList.remove("drop-before", "drop-after");
    const id = e.dataTransfer.getData("text/x-lm-id");
    const dragged = state.items.get(id);
    if (!dragged || id === item.id) return;
    let to = item.position + (side(e) === "after" ? 1 : 0);
    if (dragged.position < to) to -= 1;
    move(dragged, to);
  });
}

function renderConsumed() {
  const items = consumed();
  const list = $("consumed");
  const existing = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const frag = document.createDocumentFragment();
  for (const item of items) {
    let li = existing.get(item.id);
    if (!li) {
      const again = el("button", { className: "act", type: "button", textContent: "requeue",
        title: "Put it back at the head of the queue" });
      again.setAttribute("aria-label", "Requeue");
      again.onclick = () => requeue(item);
      li = el("li", { className: "entry" },
        el("p", { className: "entry-text", textContent: item.content }),
        el("div", { className: "meta" },
          el("span", { className: "agent-tag", textContent: item.consumed_by_agent_id || "agent" }),
          el("span", { title: item.consumed_at }, clock(item.consumed_at), " · ", timeEl(item.consumed_at)),
          item.delivery_unconfirmed ? el("span", { className: "unconfirmed",
            title: "Its consumer ended before writing it out: the agent probably never saw it",
            textContent: "not seen by the agent" }) : null,
          again));
      li.dataset.id = item.id;
      const sr = el("span", { className: "visually-hidden", textContent: "Consumed: " });
      li.firstChild.prepend(sr);
      if (!state.loaded) li.style.animation = "none";
    }
    frag.append(li);
  }
  list.replaceChildren(frag);
  $("consumed-empty").hidden = items.length > 0;
}

function renderAgents() {
  const agents = agentsByRecency();
  const list = $("agents");
  list.replaceChildren(...agents.map((a) => {
    const { waiting, connected } = agentNow(a);
    const word = waiting ? "waiting for an instruction" : connected ? "connected" : "idle";
    const dot = el("span", { className: `dot ${waiting ? "waiting" : connected ? "ok" : "idle"}` });
    const dl = el("dl", {},
      el("dt", { textContent: "last seen" }), el("dd", {}, timeEl(a.last_seen_at)),
      el("dt", { textContent: "last fetch" }), el("dd", {}, a.last_fetch_at ? timeEl(a.last_fetch_at) : "never"),
      el("dt", { textContent: "result" }), el("dd", { textContent: a.last_result_type || "–" }));
    return el("li", { className: "agent" }, dot,
      el("div", {}, el("div", { className: "agent-name", textContent: a.agent_id }),
        el("div", { className: "agent-state" }, el("strong", { className: connected ? "" : "idle", textContent: word }))), dl);
  }));
  $("agents-empty").hidden = agents.length > 0;
  const top = agents[0];
  if (top) {
    const { waiting, connected } = agentNow(top);
    $("agent-dot").className = `dot ${waiting ? "waiting" : connected ? "ok" : ""}`;
    $("agent-state").textContent = `${top.agent_id} · ${waiting ? "waiting" : connected ? "connected" : "idle"}`;
    $("last-fetch").textContent = top.last_fetch_at ? ago(top.last_fetch_at) : "never";
  }
}

function renderSettings(force = false) {
  // A field being typed in keeps what the person typed.
  const s = state.settings;
  if (!s) return;
  const put = (id, v) => { if (force || document.activeElement !== $(id)) { $(id).value = v; $(id).removeAttribute("aria-invalid"); } };
  put("set-wait", s.default_wait_seconds);
  put("set-stale", s.agent_stale_after_seconds);
  put("set-response", s.default_empty_response);
}

function render() {
  renderPending();
  renderConsumed();
  renderAgents();
}

// ---- announcements and toasts -------------------------------------------
function announce(text) { $("announce").textContent = text; }

function toast(text, { error = false, action, onAction, ms = 4000 } = {}) {
  const t = el("div", { className: `toast${error ? " error" : ""}`, role: error ? "alert" : "status" }, el("span", { textContent: text }));
  let done = false;
  const close = () => { if (!done) { done = true; t.remove(); } };
  if (action) {
    const b = el("button", { type: "button", textContent: action });
    b.onclick = () => { onAction(); close(); };
    t.append(b);
  }
  $("toasts").append(t);
  setTimeout(close, ms);
  return close;
}

function fail(err) {
  if (err instanceof AuthError) return askToken();
  toast(err instanceof APIError ? err.detail : `The gateway did not answer: ${err.message}`, { error: true, ms: 6000 });
}

// ---- actions -------------------------------------------------------------
// A composer error answers one attempt to queue: typing again or any later
// action that works makes it stale.
const clearComposerError = () => { $("composer-error").textContent = ""; };

async function add(e) {
  e.preventDefault();
  const ta = $("composer-text");
  const content = ta.value;
  $("composer-error").textContent = "";
  if (!content.trim()) { $("composer-error").textContent = "Write an instruction first."; ta.focus(); return; }
  const btn = $("composer").querySelector("button");
  btn.disabled = true;
  try {
    const out = await api("POST", "/api/instructions", { content });
    upsert(out.item);
    ta.value = "";
    renderPending();
  } catch (err) {
    if (err instanceof APIError) $("composer-error").textContent = err.detail; else fail(err);
  } finally { btn.disabled = false; ta.focus(); }
}

function startEdit(id) { state.editing = id; renderPending(); }

async function saveEdit(id, content, errEl) {
  try {
    const out = await api("PATCH", `/api/instructions/${id}`, { content });
    clearComposerError();
    state.editing = null;
    upsert(out.item);
    renderPending();
    document.querySelector(`.strip[data-id="${id}"]`)?.focus();
  } catch (err) {
    if (err instanceof APIError && err.status === 409) { state.editing = null; render(); }
    if (err instanceof APIError) errEl.textContent = err.detail;
    fail(err);
  }
}

// requeue puts a consumed instruction back at the head of the queue.
async function requeue(item) {
  try {
    const out = await api("POST", `/api/instructions/${item.id}/requeue`);
    // Ahead of everything, whatever the page numbered the rack meanwhile.
    upsert({ ...out.item, position: 0 });
    render();
    announce("Put back at the head of the queue");
  } catch (err) { fail(err); }
}

async function move(item, to) {
  const count = pending().length;
  if (to < 1 || to > count || to === item.position) return;
  try {
    const out = await api("POST", `/api/instructions/${item.id}/move`, { to });
    clearComposerError();
    out.items.forEach(upsert);
    renderPending();
    document.querySelector(`.strip[data-id="${item.id}"]`)?.focus();
    announce(`Moved to position ${to}`);
  } catch (err) { fail(err); }
}

// remove hides the strip at once and deletes after a moment, so a slip
// can be undone instead of confirmed up front.
const pendingDeletes = new Map(); // id -> timer
function remove(item) {
  const next = document.querySelector(`.strip[data-id="${item.id}"]`);
  const focusTarget = next?.nextElementSibling || next?.previousElementSibling;
  state.hidden.add(item.id);
  clearComposerError();
  renderPending();
  focusTarget?.focus();
  const commit = async () => {
    pendingDeletes.delete(item.id);
    try { await api("DELETE", `/api/instructions/${item.id}`, undefined, { keepalive: true }); }
    catch (err) { state.hidden.delete(item.id); render(); fail(err); }
  };
  pendingDeletes.set(item.id, setTimeout(commit, 4000));
  toast("Instruction deleted.", {
    action: "Undo",
    onAction: () => { clearTimeout(pendingDeletes.get(item.id)); pendingDeletes.delete(item.id); state.hidden.delete(item.id); renderPending(); },
  });
}
addEventListener("pagehide", () => {
  for (const [id, timer] of pendingDeletes) {
    clearTimeout(timer);
    api("DELETE", `/api/instructions/${id}`, undefined, { keepalive: true }).catch(() => {});
  }
});

async function saveSettings(e) {
  e.preventDefault();
  const err = $("settings-error");
  err.textContent = "";
  const form = $("settings");
  for (const i of form.querySelectorAll("input")) i.removeAttribute("aria-invalid");
  const num = (id) => { const v = $(id).value.trim(); return /^-?\d+$/.test(v) ? Number(v) : v; };
  const body = {
    default_wait_seconds: num("set-wait"),
    agent_stale_after_seconds: num("set-stale"),
    default_empty_response: $("set-response").value,
  };
  try {
    const out = await api("PATCH", "/api/config", body);
    clearComposerError();
    state.settings = { default_wait_seconds: out.default_wait_seconds, agent_stale_after_seconds: out.agent_stale_after_seconds, default_empty_response: out.default_empty_response };
    renderSettings(true);
    renderAgents();
    toast(out.warnings?.length ? out.warnings[0] : "Settings saved.", { ms: out.warnings?.length ? 8000 : 2500 });
  } catch (e2) {
    if (e2 instanceof APIError) {
      err.textContent = e2.detail;
      for (const name of Object.keys(body)) if (e2.message.includes(name)) form.elements[name].setAttribute("aria-invalid", "true");
    } else fail(e2);
  }
}

// ---- events --------------------------------------------------------------
function upsert(item) {
  const old = state.items.get(item.id);
  if (old && Date.parse(old.updated_at) > Date.parse(item.updated_at) && old.status === item.status) return;
  state.items.set(item.id, item);
}

function onEvent(type, ev) {
  const d = ev.data;
  switch (type) {
    case "instruction.created":
      upsert(d);
      renderPending();
      break;
    case "instruction.updated": // a requeued instruction leaves the ledger too
      upsert(d);
      render();
      break;
    case "instruction.consumed": {
      upsert(d);
      const li = document.querySelector(`.strip[data-id="${d.id}"]`);
      announce(`Instruction ${d.position ?? ""} consumed by ${d.consumed_by_agent_id}`);
      if (li && !matchMedia("(prefers-reduced-motion: reduce)").matches) {
        li.classList.add("consuming");
        setTimeout(() => { li.remove(); render(); }, 480);
      } else { li?.remove(); render(); }
      break;
    }
    case "instruction.deleted":
      state.items.delete(d.id);
      state.hidden.delete(d.id);
      renderPending();
      break;
    case "status.changed":
      state.agents.set(d.agent_id, d);
      renderAgents();
      break;
    case "config.updated":
      // The echo of this page's own save must not clobber what is typed next.
      if (state.settings && ["default_wait_seconds", "agent_stale_after_seconds", "default_empty_response"]
        .every((k) => state.settings[k] === d[k])) break;
      state.settings = d;
      renderSettings();
      // A value replaced from elsewhere takes its validation message with it.
      if (!$("settings").querySelector('[aria-invalid="true"]')) $("settings-error").textContent = "";
      renderAgents();
      break;
    case "resync":
      load();
      break;
  }
}

function setLive(s) {
  const live = $("live");
  live.dataset.state = s;
  live.textContent = { live: "live", reconnecting: "reconnecting…", locked: "locked", connecting: "connecting" }[s];
  const up = s === "live";
  $("server-dot").className = `dot ${up ? "ok" : s === "reconnecting" ? "down" : "warn"}`;
  $("server-state").textContent = up ? "up" : s === "reconnecting" ? "unreachable" : s;
}

// ---- token ---------------------------------------------------------------
function askToken() {
  state.stream?.stop();
  state.stream = null;
  dashboard.stop();
  setLive("locked");
  const dlg = $("token-dialog");
  // Asked again while a token is kept: the gateway refused it.
  $("token-error").textContent = token()
    ? "The gateway refused this token. Use the person's token from the URL lm gateway printed."
    : "";
  if (!dlg.open) dlg.showModal();
  $("token-input").focus();
}
$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const v = $("token-input").value.trim();
  if (!v) { $("token-error").textContent = "Paste the token."; return; }
  setToken(v);
  $("token-dialog").close();
  load();
  dashboard.start();
  if (view() === "ask") ask.show();
});
$("token-dialog").addEventListener("cancel", (e) => e.preventDefault());

// ---- start ---------------------------------------------------------------
async function load() {
  try {
    const status = await api("GET", "/api/status");
    const list = await api("GET", `/api/instructions?limit=${CONSUMED_SHOWN}`);
    state.items = new Map(list.items.map((i) => [i.id, i]));
    state.agents = new Map((status.agents || []).map((a) => [a.agent_id, a]));
    state.settings = status.settings;
    renderSettings(true);
    render();
    state.loaded = true;
    state.stream?.stop();
    state.stream = connect({ since: status.last_event_id, store: status.store_id, onEvent, onState: setLive, onAuth: askToken });
  } catch (err) {
    if (err instanceof AuthError) return askToken();
    setLive("reconnecting");
    setTimeout(load, 2000);
  }
}

// ---- views ---------------------------------------------------------------
// The URL's hash names the view, so a view can be bookmarked and the back
// button moves between them.
const dashboard = serversView({ onAuth: askToken, toast, announce });
const ask = askView({ onAuth: askToken, announce });
// Each view: its hash, where the skip link goes, and what gets the focus
// when it is switched to.
const VIEWS = {
  desk: { hash: "", skip: ["composer-text", "Skip to the composer"] },
  servers: { hash: "#servers", skip: ["servers-title", "Skip to the servers"], focus: () => $("servers-title").focus() },
  ask: { hash: "#ask", skip: ["ask-text", "Skip to the request"], focus: () => ask.focus() },
};
const view = () => Object.keys(VIEWS).find((v) => VIEWS[v].hash === location.hash) || "desk";
function showView(moveFocus) {
  const v = view();
  for (const name of Object.keys(VIEWS)) {
    $(`view-${name}`).hidden = name !== v;
    if (name === v) $(`tab-${name}`).setAttribute("aria-current", "page"); else $(`tab-${name}`).removeAttribute("aria-current");
  }
  const [target, text] = VIEWS[v].skip;
  $("skip").href = `#${target}`;
  $("skip").textContent = text;
  setTitle();
  if (v === "ask") ask.show();
  if (moveFocus) VIEWS[v].focus?.();
}
function goTo(v) {
  const hash = VIEWS[v].hash;
  if (location.hash !== hash) history.pushState(null, "", hash || location.pathname);
  showView(true);
}
addEventListener("popstate", () => showView(false));
for (const name of Object.keys(VIEWS)) {
  $(`tab-${name}`).addEventListener("click", (e) => { e.preventDefault(); goTo(name); });
}
showView(false);

$("rail-host").textContent = location.host;
$("mcp-url").textContent = `${location.origin}/mcp`;
$("composer").addEventListener("submit", add);
$("composer-text").addEventListener("input", clearComposerError);
$("composer-text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $("composer").requestSubmit(); }
  if (e.key === "Escape") e.target.blur();
});
$("settings").addEventListener("submit", saveSettings);
$("theme-toggle").addEventListener("click", toggleTheme);
document.addEventListener("keydown", (e) => {
  const typing = e.target.closest?.("input, textarea, dialog");
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "n" || e.key === "/") { e.preventDefault(); goTo("desk"); $("composer-text").focus(); }
  if (e.key === "d") goTo("desk");
  if (e.key === "s") goTo("servers");
  if (e.key === "a") { e.preventDefault(); goTo("ask"); }
  if (e.key === "t") toggleTheme();
});
setInterval(() => { refreshTimes(); renderAgents(); }, 10000);
load();
dashboard.start();
