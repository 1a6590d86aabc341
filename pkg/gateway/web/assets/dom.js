// dom.js — the two helpers every view builds its markup with. Text always
// goes in as textContent: nothing a model or a server says becomes markup.
export const $ = (id) => document.getElementById(id);

export const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  for (const c of children) if (c != null) e.append(c);
  return e;
};
