// events.js — an event stream (/api/events, /servers/events) read with
// fetch rather than EventSource, so the bearer token can be sent;
// reconnects with backoff and Last-Event-ID, so nothing is missed across a
// lost connection or a gateway restart.
import { headers } from "./api.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// store is the store_id the caller's state came from: a gateway serving
// another store answers with a resync instead of events that do not apply.
export function connect({ path = "/api/events", since, store, onEvent, onState, onAuth }) {
  let last = since;
  let stopped = false;
  let ctrl;
  let delay = 1000;

  function dispatch(block) {
    let id = null, type = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const c = line.indexOf(":");
      const field = c < 0 ? line : line.slice(0, c);
      let value = c < 0 ? "" : line.slice(c + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "id") id = value;
      else if (field === "event") type = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    if (id !== null) last = Number(id);
    let payload;
    try { payload = JSON.parse(data.join("\n")); } catch { return; }
    onEvent(type, payload);
  }

  async function run() {
    while (!stopped) {
      ctrl = new AbortController();
      try {
        const h = headers({ Accept: "text/event-stream" });
        if (last != null) h["Last-Event-ID"] = String(last);
        if (store) h["Last-Event-Store"] = store;
        const res = await fetch(path, { headers: h, signal: ctrl.signal, cache: "no-store" });
        if (res.status === 401) { onAuth(); return; }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        onState("live");
        delay = 1000;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            dispatch(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
      } catch {
        // a dropped connection: fall through to reconnect
      }
      // Whatever ended the read, the connection goes with it: a stream left
      // open would hold one of the browser's few connections to the host.
      ctrl.abort();
      if (stopped) return;
      onState("reconnecting");
      await sleep(delay);
      delay = Math.min(delay * 2, 10000);
    }
  }
  run();
  return { stop() { stopped = true; ctrl?.abort(); } };
}
