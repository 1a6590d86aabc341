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
