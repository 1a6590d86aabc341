// servers.js — the servers dashboard: the supervised MCP servers, the
// cache and the live log of proxied calls, kept live by /servers/events.
import { api, AuthError } from "./api.js";
import { connect } from "./events.js";
import { $, el } from "./dom.js";
import { clock, timeEl } from "./time.js";

const CALLS_SHOWN = 200;

// tone is how a state reads at a glance: healthy, in motion, failed, at rest.
const tone = (state) => ({
  running: "ok", degraded: "warn", starting: "warn", installing: "warn",
  restarting: "warn", stopping: "warn", failed: "down",
}[state] || "idle");
const live = (s) => ["running", "degraded", "starting", "installing", "restarting"].includes(s.state);

export function serversView({ onAuth, toast, announce }) {
  const state = {
    servers: new Map(), // name -> status
    cache: null,
    busy: new Map(),    // name -> the action under way
    confirming: null,   // the server whose Remove waits for a second click
    confirmTimer: 0,
    lastSeq: 0,         // newest call shown
    snapshot: true,     // the next activity event is a fresh stream's backlog
    stream: null,
  };

  // ---- servers -----------------------------------------------------------
  function renderServers() {
    const list = $("servers");
    const names = [...state.servers.keys()].sort();
    const focused = document.activeElement?.closest?.(".server");
    const focusedAction = document.activeElement?.dataset?.action;
    const existing = new Map([...list.children].map((li) => [li.dataset.name, li]));
    for (const [name, li] of existing) if (!state.servers.has(name)) li.remove();
    names.forEach((name, idx) => {
      const s = state.servers.get(name);
      const sig = JSON.stringify([s, state.busy.get(name), state.confirming === name]);
      let li = existing.get(name);
      if (!li || li.dataset.sig !== sig) {
        const fresh = serverItem(s);
        fresh.dataset.sig = sig;
        if (li) { fresh.style.animation = "none"; li.replaceWith(fresh); } else list.append(fresh);
        if (focused && focused === li) {
          const same = fresh.querySelector(`[data-action="${focusedAction}"]:not([disabled])`);
          (same || fresh.querySelector("button:not([disabled])") || fresh).focus();
        }
        li = fresh;
      }
      if (list.children[idx] !== li) list.insertBefore(li, list.children[idx]);
    });
    $("servers-empty").hidden = names.length > 0;
    const enabled = names.map((n) => state.servers.get(n)).filter((s) => s.enabled);
    const up = enabled.filter((s) => s.state === "running" || s.state === "degraded").length;
    $("servers-count").textContent = enabled.length ? `${up}/${enabled.length}` : "none";
    const failed = enabled.some((s) => s.state === "failed" || s.breaker.state === "OPEN");
    const moving = enabled.some((s) => tone(s.state) === "warn");
    $("servers-dot").className = `dot ${failed ? "down" : moving ? "warn" : up ? "ok" : ""}`;
  }

  const counted = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;

  function serverItem(s) {
    const t = s.enabled ? tone(s.state) : "idle";
    const li = el("li", { className: "server", tabIndex: -1 });
    li.dataset.name = s.name;
    li.dataset.tone = t;
    const head = el("div", { className: "server-head" },
      el("h3", { className: "server-name", textContent: s.name }),
      el("span", { className: "tag", textContent: s.state }),
      s.enabled ? null : el("span", { className: "tag", textContent: "disabled" }));
    head.children[1].dataset.tone = t;
    const fact = (k, v) => (v == null || v === "" ? null : el("div", {}, el("dt", { textContent: k }), el("dd", {}, v)));
    const b = s.breaker;
    const breaker = el("span", { className: `breaker breaker-${b.state.toLowerCase()}`, textContent: b.state.replace("_", "-").toLowerCase() });
    if (b.state !== "CLOSED") breaker.append(` · ${b.failures} failed${b.retry_at ? ` · retry ${clock(b.retry_at, true)}` : ""}`);
    const facts = el("dl", { className: "facts" },
      fact("transport", s.transport),
      fact("pid", s.pid ? String(s.pid) : null),
      fact("up since", s.started_at ? timeEl(s.started_at) : null),
      fact("restarts", String(s.restart_count)),
      fact("tools", `${s.tools}${s.prompts ? ` · ${counted(s.prompts, "prompt")}` : ""}${s.resources ? ` · ${counted(s.resources, "resource")}` : ""}`),
      fact("probe", s.latency_ms ? `${s.latency_ms.toFixed(1)} ms` : null),
      fact("breaker", breaker),
      fact("next try", s.next_retry_at ? clock(s.next_retry_at, true) : null));
    const main = el("div", { className: "server-main" }, head,
      s.description ? el("p", { className: "server-desc", textContent: s.description }) : null, facts);
    const busy = state.busy.get(s.name);
    const action = (name, label, allowed) => {
      const btn = el("button", { className: "btn btn-small", type: "button", textContent: busy === name ? `${label}…` : label });
      btn.dataset.action = name;
      btn.disabled = !!busy || !s.enabled || !allowed;
      if (busy === name) btn.setAttribute("aria-busy", "true");
      btn.setAttribute("aria-label", `${label} ${s.name}`);
      if (!s.enabled) btn.title = `Disabled: lm servers enable ${s.name}`;
      btn.onclick = () => act(s.name, name, label);
      return btn;
    };
    const remove = el("button", { className: "btn btn-small", type: "button",
      textContent: busy === "remove" ? "Removing…" : state.confirming === s.name ? "Remove it?" : "Remove" });
    remove.dataset.action = "remove";
    remove.disabled = !!busy;
    remove.setAttribute("aria-label", state.confirming === s.name ? `Confirm: remove ${s.name}` : `Remove ${s.name}`);
    remove.onclick = () => removeServer(s.name);
    const actions = el("div", { className: "server-actions" },
      action("start", "Start", !live(s) && s.state !== "stopping"),
      action("stop", "Stop", live(s)),
      action("restart", "Restart", s.state !== "stopping"),
      remove);
    li.append(main, actions);
    if (s.last_error) {
      li.append(el("pre", { className: "server-error", textContent: s.last_error }));
    }
    li.setAttribute("aria-label", `${s.name}: ${s.state}${s.enabled ? "" : ", disabled"}`);
    return li;
  }

  async function act(name, action, label) {
    state.busy.set(name, action);
    renderServers();
    try {
      const out = await api("POST", `/servers/${encodeURIComponent(name)}/${action}`);
      state.servers.set(name, out);
      announce(`${name} is ${out.state}`);
    } catch (err) {
      if (err instanceof AuthError) { onAuth(); return; }
      toast(`${label} ${name}: ${err.detail || err.message}`, { error: true, ms: 8000 });
    } finally {
      state.busy.delete(name);
      renderServers();
    }
  }

  // ---- adding and removing -------------------------------------------------
  // The configuration changes through the same operations as lm servers
  // add, install and rm, so the page says exactly what the CLI would.

  // Removing asks for a second click on the same button rather than a
  // dialog; the question lapses after a few seconds.
  async function removeServer(name) {
    clearTimeout(state.confirmTimer);
    if (state.confirming !== name) {
      state.confirming = name;
      state.confirmTimer = setTimeout(() => { state.confirming = null; renderServers(); }, 5000);
      renderServers();
      return;
    }
    state.confirming = null;
    state.busy.set(name, "remove");
    renderServers();
    try {
      await api("DELETE", `/api/servers/${encodeURIComponent(name)}`);
      state.servers.delete(name);
      announce(`${name} removed`);
      toast(`Removed ${name}.`, { ms: 3000 });
    } catch (err) {
      if (err instanceof AuthError) { onAuth(); return; }
      toast(`Remove ${name}: ${err.detail || err.message}`, { error: true, ms: 8000 });
    } finally {
      state.busy.delete(name);
      renderServers();
    }
  }

  const form = $("server-form");
  const kind = () => form.elements.kind.value;
  function showKind() {
    for (const e of form.querySelectorAll("[data-kind]")) e.hidden = !e.dataset.kind.split(" ").includes(kind());
    $("srv-name-unit").textContent = kind() === "package" ? "optional: from the package's name" : "letters, digits, - and _";
    $("server-form-submit").textContent = kind() === "package" ? "Install server" : "Add server";
  }

  function formError(message, field) {
    $("server-form-error").textContent = message;
    for (const e of form.querySelectorAll("[aria-invalid]")) e.removeAttribute("aria-invalid");
    if (field) { field.setAttribute("aria-invalid", "true"); field.focus(); }
  }

  async function addServer(e) {
    e.preventDefault();
    const f = form.elements;
    const body = { name: f.name.value.trim(), auto_start: f.auto_start.checked };
    let path = "/api/servers";
    if (kind() === "package") {
      path = "/api/servers/install";
      body.package = f.package.value.trim();
      if (!body.name) delete body.name;
    } else {
      if (f.description.value.trim()) body.description = f.description.value.trim();
      if (kind() === "url") body.url = f.url.value.trim();
      else {
        try { body.command = words(f.command.value); } catch (err) { return formError(err.message, f.command); }
        const env = f.env.value.split("\n").map((l) => l.trim()).filter(Boolean);
        if (env.length) body.env = env;
      }
    }
    const submit = $("server-form-submit");
    const label = submit.textContent;
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    submit.textContent = kind() === "package" ? "Installing…" : "Adding…";
    formError("");
    try {
      const out = await api("POST", path, body);
      form.reset();
      showKind();
      announce(`${out.name} added`);
      toast(`Added ${out.name}.`, { ms: 3000 });
    } catch (err) {
      if (err instanceof AuthError) { onAuth(); return; }
      formError(err.detail || err.message);
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
      submit.textContent = label;
    }
  }

  form.addEventListener("change", (e) => { if (e.target.name === "kind") { showKind(); formError(""); } });
  form.addEventListener("input", () => { if ($("server-form-error").textContent) formError(""); });
  form.addEventListener("submit", addServer);
  showKind();

  // ---- cache -------------------------------------------------------------
  function renderCache() {
    const c = state.cache;
    if (!c) return;
    const lookups = c.hits + c.misses;
    const ratio = lookups ? c.hits / lookups : 0;
    const row = (k, v) => [el("dt", { textContent: k }), el("dd", { textContent: v })];
    $("cache-stats").replaceChildren(
      ...row("hit ratio", lookups ? `${Math.round(ratio * 100)} %` : "–"),
      ...row("hits", String(c.hits)),
      ...row("misses", String(c.misses)),
      ...row("entries", `${c.entries} of ${c.max_size}`),
      ...row("evictions", String(c.evictions)),
      ...row("kept for", `${c.ttl_seconds} s`));
    $("cache-meter").firstElementChild.style.width = `${(ratio * 100).toFixed(1)}%`;
    $("cache-meter").setAttribute("aria-label", `Hit ratio ${lookups ? Math.round(ratio * 100) + " %" : "not measured yet"}`);
  }

  async function clearCache() {
    const btn = $("cache-clear");
    btn.disabled = true;
    try {
      state.cache = await api("DELETE", "/cache");
      renderCache();
      toast("Cache cleared.", { ms: 2500 });
    } catch (err) {
      if (err instanceof AuthError) onAuth(); else toast(err.detail || err.message, { error: true, ms: 6000 });
    } finally { btn.disabled = false; }
  }

  // ---- activity ----------------------------------------------------------
  function callItem(a) {
    const li = el("li", { className: "call" },
      el("time", { dateTime: a.time, title: new Date(a.time).toLocaleString(), textContent: clock(a.time, true) }),
      el("span", { className: "call-server", textContent: a.server }),
      el("span", { className: "call-what" }, a.method, a.name ? el("span", { className: "call-name", textContent: ` ${a.name}` }) : null),
      el("span", { className: "call-ms", textContent: `${a.duration_ms < 10 ? a.duration_ms.toFixed(1) : Math.round(a.duration_ms)} ms` }),
      el("span", { className: "tag", textContent: a.outcome }));
    li.lastChild.dataset.tone = { ok: "ok", cached: "ok", error: "down", rejected: "down" }[a.outcome] || "idle";
    if (a.error) li.append(el("p", { className: "call-error", textContent: a.error }));
    li.dataset.seq = a.seq;
    return li;
  }

  function addCalls(calls) {
    const list = $("activity");
    if (state.snapshot) {
      state.snapshot = false;
      state.lastSeq = 0;
      list.replaceChildren();
    }
    const fresh = calls.filter((a) => a.seq > state.lastSeq);
    if (!fresh.length) return;
    state.lastSeq = fresh[fresh.length - 1].seq;
    const frag = document.createDocumentFragment();
    for (const a of fresh.slice(-CALLS_SHOWN).reverse()) frag.append(callItem(a));
    list.prepend(frag);
    while (list.children.length > CALLS_SHOWN) list.lastChild.remove();
    $("activity-empty").hidden = list.children.length > 0;
  }

  // ---- the stream --------------------------------------------------------
  function onEvent(type, data) {
    if (type === "servers") {
      for (const s of data.servers) {
        const old = state.servers.get(s.name);
        if (old && old.state !== s.state && (s.state === "failed" || s.state === "running")) announce(`${s.name} is ${s.state}`);
      }
      state.servers = new Map(data.servers.map((s) => [s.name, s]));
      state.cache = data.cache;
      renderServers();
      renderCache();
    } else if (type === "activity") {
      addCalls(data);
    }
  }

  function start() {
    state.stream?.stop();
    state.snapshot = true;
    state.stream = connect({
      path: "/servers/events",
      onEvent,
      onState: (s) => { if (s === "live") state.snapshot = true; },
      onAuth,
    });
  }

  $("cache-clear").addEventListener("click", clearCache);
  $("hub-url").textContent = `${location.origin}/mcp`;
  $("hub-one-url").textContent = `${location.origin}/mcp/NAME`;
  return {
    start,
    stop() { state.stream?.stop(); state.stream = null; },
  };
}

// words splits a command line as a POSIX shell would split its words, with
// quotes and backslashes, and nothing else: no variables, globs or
// operators, which a server's command does not run through.
function words(line) {
  const out = [];
  let word = null;
  let quote = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = ""; else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = "";
      else if (c === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) word += line[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else if (/\s/.test(c)) {
      if (word !== null) out.push(word);
      word = null;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (quote) throw new Error(`The command has an unclosed ${quote === "'" ? "single" : "double"} quote.`);
  if (word !== null) out.push(word);
  return out;
}
