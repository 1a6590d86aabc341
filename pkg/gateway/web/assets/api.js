// api.js — the gateway's HTTP API, with the bearer token when one is set.
const TOKEN_KEY = "lm.token";

export class AuthError extends Error {}

// APIError carries lm's JSON error envelope.
export class APIError extends Error {
  constructor(status, body) {
    super(body.error || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
  get detail() {
    return this.body.suggestion ? `${this.message}. ${this.body.suggestion}` : this.message;
  }
}

export const token = () => localStorage.getItem(TOKEN_KEY) || "";
export const setToken = (t) => localStorage.setItem(TOKEN_KEY, t);

// The URL the gateway prints carries the person's token in its fragment
// (#token=…), which browsers never send to a server. Keep it, and take it
// out of the address bar and the history, so it is not bookmarked, shared
// or shown; a reload then runs on the kept token (as Jupyter does).
{
  const m = /^#token=([^&]+)/.exec(location.hash);
  if (m) {
    setToken(decodeURIComponent(m[1].replace(/\+/g, " ")));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

export function headers(extra = {}) {
  const h = { ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

// api calls the gateway; a signal lets the caller stop waiting (fetch then
// rejects with an AbortError and the gateway sees the request end).
export async function api(method, path, body, { keepalive = false, signal } = {}) {
  const init = { method, headers: headers(), keepalive, signal, cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  const data = await res.json().catch(() => ({}));
  if (res.status === 401) throw new AuthError(data.error || "token required");
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}
