// time.js — relative times ("12 s ago") that the page refreshes.
export function ago(iso, now = Date.now()) {
  if (!iso) return "never";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ago`;
  return `${Math.floor(h / 24)} d ago`;
}

export const clock = (iso, seconds = false) => new Date(iso).toLocaleTimeString([],
  seconds ? { hour: "2-digit", minute: "2-digit", second: "2-digit" } : { hour: "2-digit", minute: "2-digit" });

// timeEl is a <time> whose text the page keeps fresh.
export function timeEl(iso) {
  const t = document.createElement("time");
  t.dateTime = iso || "";
  t.dataset.rel = "";
  t.title = iso ? new Date(iso).toLocaleString() : "";
  t.textContent = ago(iso);
  return t;
}

export function refreshTimes(root = document) {
  const now = Date.now();
  for (const t of root.querySelectorAll("time[data-rel]")) t.textContent = ago(t.dateTime, now);
}
