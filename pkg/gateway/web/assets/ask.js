// ask.js — the Ask view: a request in plain words becomes a tool call the
// model proposes (servers_ask, dry run), which the person approves, edits
// or rejects; an approved call runs (servers_call, recorded as approved)
// and its result joins the thread. "Ask again with this result" sends the
// turns so far as servers_ask's previous, so the model reads the follow-up
// against what ran. The thread is kept in the store for this browser's page
// session, so a reload or a second tab shows it; Clear forgets it.
import { api, APIError, AuthError } from "./api.js";
import { $, el } from "./dom.js";
import { clock } from "./time.js";

const SERVER_KEY = "lm.ask.server";
const SESSION_KEY = "lm.ask.session";
const HISTORY_SHOWN = 8;
const GO_ON = "Go on from this result: propose the next call, or answer my request.";
const PLACEHOLDER = "Ask in plain words, e.g. “add 40 and 2”…";

const pretty = (v) => JSON.stringify(v ?? {}, null, 2);
const stopped = (err) => err.name === "AbortError";
const problem = (err) => (err instanceof APIError ? err.detail : `The gateway did not answer: ${err.message}`);

// jsonNodes is v as indented JSON, its keys, strings, numbers and literals
// in spans the stylesheet colours.
const TOKEN = /("(?:[^"\\]|\\.)*")(\s*:)?|\b(?:true|false|null)\b|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
function jsonNodes(v) {
  const text = JSON.stringify(v, null, 2) ?? "null";
  const out = [];
  let last = 0;
  for (const m of text.matchAll(TOKEN)) {
    out.push(text.slice(last, m.index));
    const kind = m[1] ? (m[2] ? "key" : "str") : /^[tfn]/.test(m[0]) ? "lit" : "num";
    out.push(el("span", { className: `j-${kind}`, textContent: m[1] ?? m[0] }), m[2] ?? "");
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}
const jsonBlock = (v) => el("pre", { className: "json" }, ...jsonNodes(v));

// resultBody shows a result: text blocks as text (or as JSON when the text
// is JSON, as many servers send it), anything else as JSON.
function resultBody(result) {
  const texts = Array.isArray(result) && result.length > 0 && result.every((b) => b?.type === "text" && typeof b.text === "string");
  if (!texts) return jsonBlock(result);
  return el("div", { className: "result-text" }, ...result.map((b) => {
    const parsed = parseJSON(b.text);
    return parsed === undefined ? el("p", { textContent: b.text }) : jsonBlock(parsed);
  }));
}
function parseJSON(text) {
  if (!/^\s*[[{]/.test(text)) return undefined;
  try { return JSON.parse(text); } catch { return undefined; }
}

const button = (text, className = "btn") => el("button", { type: "button", className, textContent: text });

// session names this browser's Ask thread in the store; tabs share it.
function session() {
  let id = localStorage.getItem(SESSION_KEY);
  if (!id) {
    id = crypto.randomUUID();
    localStorage.setItem(SESSION_KEY, id);
  }
  return id;
}
const threadPath = () => `/api/ask/thread/${encodeURIComponent(session())}`;

export function askView({ onAuth, announce }) {
  const state = {
    loaded: false,   // the server list came
    server: "",      // the chosen server
    connecting: 0,   // the latest tools fetch, so a slow old one is ignored
    followUp: null,  // {server, turn, tool}: the next request continues this turn's chain
    thread: [],      // the turns shown, as the store keeps them
  };

  // ---- servers and their connection --------------------------------------
  async function loadServers() {
    try {
      const out = await api("GET", "/api/servers");
      state.loaded = true;
      const select = $("ask-server");
      select.replaceChildren(...out.servers.map((s) => {
        const off = s.config.enabled === false;
        const o = el("option", { value: s.name, textContent: off ? `${s.name} (disabled)` : s.name, disabled: off });
        if (s.config.description) o.title = s.config.description;
        return o;
      }));
      const usable = out.servers.filter((s) => s.config.enabled !== false).map((s) => s.name);
      $("ask-no-servers").hidden = usable.length > 0;
      $("ask-fields").disabled = usable.length === 0;
      if (!usable.length) {
        state.server = "";
        setConn("idle", "no server to ask");
        return;
      }
      const remembered = localStorage.getItem(SERVER_KEY);
      choose(usable.includes(remembered) ? remembered : usable[0]);
    } catch (err) {
      if (err instanceof AuthError) return onAuth();
      setConn("error", problem(err));
    }
  }

  function choose(name) {
    $("ask-server").value = name;
    if (name === state.server) return;
    if (state.followUp && state.followUp.server !== name) setFollowUp(null);
    state.server = name;
    localStorage.setItem(SERVER_KEY, name);
    connect();
    loadHistory();
  }

  // connect lists the server's tools: the connection state the spec asks
  // for, and an honest early word when a server is down.
  async function connect() {
    const mine = ++state.connecting;
    $("ask-tools").replaceChildren();
    setConn("connecting", `connecting to ${state.server}…`);
    try {
      const out = await api("GET", `/api/servers/${encodeURIComponent(state.server)}/tools`);
      if (mine !== state.connecting) return;
      setConn("connected", `connected · ${out.tools.length} tools`);
      $("ask-tools").replaceChildren(...out.tools.map((t) => el("li", {},
        el("code", { textContent: t.name }), t.description ? el("span", { textContent: t.description }) : null)));
    } catch (err) {
      if (mine !== state.connecting) return;
      if (err instanceof AuthError) return onAuth();
      setConn("error", problem(err));
    }
  }

  function setConn(s, text) {
    $("ask-conn").dataset.state = s;
    $("ask-conn-text").textContent = text;
    $("ask-retry").hidden = s !== "error" || !state.server;
    $("ask-tools-empty").hidden = s === "connected";
  }

  async function loadHistory() {
    const server = state.server;
    try {
      const out = await api("GET", `/api/history?target=${encodeURIComponent(server)}&limit=${HISTORY_SHOWN}`);
      if (server !== state.server) return;
      $("ask-history").replaceChildren(...out.items.reverse().map((r) => {
        const tag = el("span", { className: "tag", textContent: r.outcome.replace("_", " ") });
        tag.dataset.tone = r.outcome === "ok" ? "ok" : "down";
        return el("li", {},
          el("div", { className: "history-head" }, el("code", { textContent: r.tool }), tag),
          el("div", { className: "meta" }, el("time", { dateTime: r.time, textContent: clock(r.time, true) }),
            el("span", { textContent: r.approval }), el("span", { textContent: `${r.duration_ms} ms` })),
          r.summary ? el("p", { className: "history-summary", textContent: r.summary }) : null);
      }));
      $("ask-history-empty").hidden = out.items.length > 0;
    } catch (err) {
      if (err instanceof AuthError) onAuth();
    }
  }

  // ---- the thread --------------------------------------------------------
  // A turn: {id, server, request, follows (the id of the turn it follows
  // up, or null), steps: [{proposal, approval, arguments?, result?, error?,
  // duration_ms?, history_id?}], answer?}.

  // chain is the turns a turn follows up, oldest first: servers_ask's
  // previous.
  function chain(turn) {
    const out = [];
    for (let id = turn.follows; id;) {
      const t = state.thread.find((x) => x.id === id);
      if (!t) break;
      out.unshift(t);
      id = t.follows;
    }
    return out;
  }

  // save keeps the thread in the store; a failure costs only the copy a
  // reload would show, so it is told, not thrown.
  async function save() {
    try {
      await api("PUT", threadPath(), { turns: state.thread });
    } catch (err) {
      if (err instanceof AuthError) return onAuth();
      announce("The conversation could not be saved: a reload will not show its latest turns.");
    }
  }

  async function loadThread() {
    try {
      const out = await api("GET", threadPath());
      state.thread = out.turns.filter((t) => t && typeof t.request === "string" && Array.isArray(t.steps));
      $("ask-thread").replaceChildren(...state.thread.map(restoredTurn));
      showEmpty();
    } catch (err) {
      if (err instanceof AuthError) onAuth();
    }
  }

  async function clearThread() {
    try {
      await api("DELETE", threadPath());
    } catch (err) {
      if (err instanceof AuthError) return onAuth();
      $("ask-error").textContent = problem(err);
      return;
    }
    state.thread = [];
    $("ask-thread").replaceChildren();
    setFollowUp(null);
    showEmpty();
    announce("The conversation is cleared.");
    $("ask-text").focus();
  }

  function showEmpty() {
    $("ask-empty").hidden = state.thread.length > 0 || $("ask-thread").children.length > 0;
    $("ask-clear").hidden = state.thread.length === 0;
  }

  function turnItem(turn) {
    return el("li", { className: "turn" },
      el("div", { className: "bubble you" },
        el("div", { className: "who" }, turn.follows ? "You, following up · " : "You · ", el("code", { textContent: turn.server })),
        el("p", { textContent: turn.request })));
  }

  const answerBubble = (answer) => el("div", { className: "bubble answer" }, el("div", { className: "who", textContent: "Answer" }),
    el("p", { textContent: answer || "The model had nothing to add." }));

  // restoredTurn shows a kept turn as it was left: settled proposals with
  // their results, an open one still to approve, the answer.
  function restoredTurn(turn) {
    const li = turnItem(turn);
    for (const step of turn.steps) {
      li.append(proposalCard(turn, step, turn.server));
      if (step.error) li.append(resultCard(turn, step, turn.server, null));
      else if (step.result !== undefined) li.append(resultCard(turn, step, turn.server, step));
    }
    if (!turn.steps.length) li.append(answerBubble(turn.answer));
    return li;
  }

  function setFollowUp(f) {
    state.followUp = f;
    $("ask-followup").hidden = !f;
    if (f) $("ask-followup-what").textContent = `the result of ${f.tool}`;
    $("ask-text").placeholder = f ? GO_ON : PLACEHOLDER;
  }

  async function ask(e) {
    e.preventDefault();
    const ta = $("ask-text");
    const err = $("ask-error");
    err.textContent = "";
    const followUp = state.followUp;
    const request = ta.value.trim() || (followUp ? GO_ON : "");
    if (!request) { err.textContent = "Write a request first."; ta.focus(); return; }
    const server = state.server;
    const turn = { id: crypto.randomUUID(), server, request, follows: followUp ? followUp.turn.id : null, steps: [] };
    ta.value = "";
    setFollowUp(null);
    const li = turnItem(turn);
    // Stop abandons the request: the gateway sees it end and stops asking
    // the model.
    const stop = new AbortController();
    const stopAsk = button("Stop", "btn btn-small");
    stopAsk.onclick = () => stop.abort();
    const thinking = el("div", { className: "thinking-row" },
      el("p", { className: "thinking", role: "status", textContent: `The model is choosing among ${server}'s tools…` }), stopAsk);
    li.append(thinking);
    $("ask-thread").append(li);
    $("ask-empty").hidden = true;
    li.scrollIntoView({ block: "nearest" });
    const submit = $("ask-submit");
    submit.disabled = true;
    try {
      const out = await api("POST", "/api/ask", { server, request, dry_run: true, previous: chain(turn).map(sent) }, { signal: stop.signal });
      thinking.remove();
      state.thread.push(turn);
      showEmpty();
      if (out.steps.length) {
        const step = { proposal: out.steps[0].proposal, approval: "proposed" };
        turn.steps.push(step);
        const card = proposalCard(turn, step, server);
        li.append(card);
        card.focus();
        announce(`The model proposes ${step.proposal.tool}. y approves, e edits, n rejects.`);
      } else {
        turn.answer = out.answer;
        li.append(answerBubble(out.answer));
        announce("The model answered.");
      }
      save();
    } catch (e2) {
      thinking.remove();
      if (e2 instanceof AuthError) { onAuth(); return; }
      if (stopped(e2)) {
        li.append(el("p", { className: "note", textContent: "Stopped: nothing was proposed and nothing ran." }));
        announce("Stopped.");
      } else {
        li.append(errorCard(e2));
      }
      // The request can be sent again as it was.
      ta.value = request === GO_ON ? "" : request;
      if (followUp) setFollowUp(followUp);
    } finally {
      submit.disabled = false;
    }
  }

  // sent is a turn as servers_ask takes it.
  const sent = (t) => ({ request: t.request, steps: t.steps, answer: t.answer });

  function errorCard(err) {
    const category = err instanceof APIError ? err.body.error_category : "";
    const title = {
      model_unavailable: "No model is configured",
      ollama_unavailable: "The model cannot be reached",
      model_not_loaded: "The model is not available",
      invalid_output: "The model proposed no usable call",
      unavailable: "The server cannot be reached",
    }[category] || "The request failed";
    const card = el("section", { className: "card card-error", role: "alert" },
      el("h3", { className: "label", textContent: title }),
      el("p", { textContent: err.message }));
    if (err instanceof APIError && err.body.suggestion) card.append(el("p", { className: "suggestion", textContent: err.body.suggestion }));
    return card;
  }

  function proposalCard(turn, step, server) {
    const p = step.proposal;
    const card = el("section", { className: "card proposal", tabIndex: -1 });
    card.setAttribute("aria-label", `Proposed call: ${p.tool}`);
    const view = jsonBlock(p.arguments ?? {});
    const editor = el("textarea", { className: "json-edit", value: pretty(p.arguments), spellcheck: false, hidden: true });
    editor.rows = Math.min(14, pretty(p.arguments).split("\n").length + 1);
    editor.setAttribute("aria-label", `Arguments of ${p.tool}, as a JSON object`);
    const error = el("p", { className: "form-error", role: "alert" });
    const approve = button("Approve", "btn btn-primary");
    const edit = button("Edit");
    const reject = button("Reject");
    const stopRun = button("Stop waiting");
    stopRun.hidden = true;
    let running = null; // the AbortController of the call in flight
    stopRun.onclick = () => running?.abort();
    const actions = el("div", { className: "card-actions" },
      el("span", { className: "hint" }, el("kbd", { textContent: "y" }), " approve · ", el("kbd", { textContent: "e" }), " edit · ",
        el("kbd", { textContent: "n" }), " reject"), error, reject, edit, approve, stopRun);
    card.append(
      el("div", { className: "card-head" }, el("h3", { className: "label", textContent: "Proposed call" }),
        el("code", { className: "tool", textContent: p.tool })),
      p.reason ? el("p", { className: "reason", textContent: p.reason }) : null,
      el("div", { className: "args-label", textContent: "Arguments" }), view, editor, actions);

    let editing = false;
    const showError = (text) => { error.textContent = text; if (editing) editor.setAttribute("aria-invalid", "true"); };
    const clearError = () => { error.textContent = ""; editor.removeAttribute("aria-invalid"); };
    const setEditing = (on) => {
      editing = on;
      editor.hidden = !on;
      view.hidden = on;
      edit.textContent = on ? "Cancel edit" : "Edit";
      clearError();
      if (on) editor.focus(); else { editor.value = pretty(p.arguments); card.focus(); }
    };
    // The arguments to run with, or null with the reason shown.
    const args = () => {
      if (!editing) return p.arguments ?? {};
      let v;
      try { v = JSON.parse(editor.value); } catch (e) { showError(`The arguments are not valid JSON: ${e.message}`); return null; }
      if (v === null || typeof v !== "object" || Array.isArray(v)) { showError("The arguments must be a JSON object: { … }"); return null; }
      return v;
    };
    const busy = (on) => {
      for (const b of [approve, edit, reject]) b.disabled = on;
      stopRun.hidden = !on;
      running = on ? new AbortController() : null;
      approve.textContent = on ? "Running…" : "Approve";
      if (on) approve.setAttribute("aria-busy", "true"); else approve.removeAttribute("aria-busy");
    };
    // settle closes the proposal with the person's verdict.
    const settle = (verdict, ran) => {
      step.approval = verdict;
      if (verdict === "edited") step.arguments = ran;
      else delete step.arguments;
      const tag = el("span", { className: "tag", textContent: verdict });
      tag.dataset.tone = verdict === "rejected" ? "idle" : "ok";
      card.querySelector(".card-head").append(tag);
      card.classList.add("settled", `settled-${verdict}`);
      if (ran) view.replaceChildren(...jsonNodes(ran));
      view.hidden = false;
      editor.remove();
      actions.remove();
    };

    async function run() {
      const ran = args();
      if (!ran) return;
      clearError();
      busy(true);
      try {
        const out = await api("POST", "/api/call", { server, tool: p.tool, arguments: ran }, { signal: running.signal });
        settle(editing && pretty(ran) !== pretty(p.arguments) ? "edited" : "approved", ran);
        Object.assign(step, { result: out.result, duration_ms: out.duration_ms, history_id: out.history_id });
        card.after(resultCard(turn, step, server, out));
        announce(`${p.tool} ran.`);
        save();
      } catch (err) {
        busy(false);
        if (err instanceof AuthError) { onAuth(); return; }
        if (stopped(err)) {
          // The gateway cancels the call, but a server may have acted
          // before it heard: the history says what became of it.
          showError("Stopped waiting. The server was asked to cancel the call; it may have run already — the history below shows the outcome.");
        } else if (err instanceof APIError && err.body.error_category === "tool_error") {
          settle(editing && pretty(ran) !== pretty(p.arguments) ? "edited" : "approved", ran);
          step.error = err.message;
          card.after(resultCard(turn, step, server, null));
          announce(`${p.tool} reported an error.`);
          save();
        } else {
          // Nothing ran (invalid arguments, the server unreachable): the
          // call stays open to fix or approve again.
          if (err instanceof APIError && err.status === 422 && !editing) setEditing(true);
          showError(problem(err));
        }
      }
      loadHistory();
    }

    approve.onclick = run;
    edit.onclick = () => setEditing(!editing);
    reject.onclick = () => {
      settle("rejected", null);
      card.append(rejectedNote());
      announce("Rejected: nothing ran.");
      save();
      $("ask-text").focus();
    };
    editor.onblur = () => { if (editing && editor.value.trim()) args(); };
    editor.oninput = clearError;
    card.onkeydown = (e) => {
      if (e.target === editor) {
        if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); }
        if (e.key === "Escape") { e.preventDefault(); setEditing(false); }
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey || !card.contains(actions) || approve.disabled) return;
      const act = { y: run, e: () => setEditing(!editing), n: reject.onclick }[e.key];
      if (act) { e.preventDefault(); e.stopPropagation(); act(); }
    };
    // A kept step shows as it was settled.
    if (step.approval === "rejected") {
      settle("rejected", null);
      card.append(rejectedNote());
    } else if (step.approval !== "proposed") {
      settle(step.approval, step.arguments ?? p.arguments ?? {});
    }
    return card;
  }

  const rejectedNote = () => el("p", { className: "note", textContent: "Rejected: nothing ran." });

  function resultCard(turn, step, server, out) {
    const failed = !out;
    const again = button("Ask again with this result");
    again.onclick = () => {
      choose(server);
      setFollowUp({ server, turn, tool: step.proposal.tool });
      $("ask-text").focus();
    };
    return el("section", { className: `card result${failed ? " card-error" : ""}` },
      el("div", { className: "card-head" },
        el("h3", { className: "label", textContent: failed ? "The tool reported an error" : "Result" }),
        el("code", { className: "tool", textContent: step.proposal.tool }),
        out?.history_id ? el("span", { className: "meta", textContent: `${out.duration_ms} ms · ${out.history_id.slice(-8).toLowerCase()}` }) : null),
      failed ? el("p", { className: "result-error", textContent: step.error }) : resultBody(out.result),
      el("div", { className: "card-actions" }, again));
  }

  $("ask-form").addEventListener("submit", ask);
  $("ask-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $("ask-form").requestSubmit(); }
    if (e.key === "Escape") e.target.blur();
  });
  $("ask-server").addEventListener("change", (e) => choose(e.target.value));
  $("ask-retry").addEventListener("click", connect);
  $("ask-followup-clear").addEventListener("click", () => { setFollowUp(null); $("ask-text").focus(); });
  $("ask-clear").addEventListener("click", clearThread);
  setFollowUp(null);

  return {
    // show loads the servers the first time the view is shown, so the
    // desk alone never starts a server's program.
    show() {
      if (state.loaded) return;
      loadServers();
      loadThread();
    },
    focus() { $("ask-text").focus(); },
  };
}
