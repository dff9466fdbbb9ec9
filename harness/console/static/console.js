// The console's shared script: CSRF-carrying requests and the live event stream.
// No inline script is allowed (CSP script-src 'self'): pages pass data in data-* attributes.
"use strict";

const Proctor = (() => {
  const csrf = () => document.querySelector('meta[name="csrf-token"]').content;

  // POST JSON (or nothing) with the session's CSRF value; resolves to {ok, status, body}.
  async function post(url, data) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
      body: JSON.stringify(data === undefined ? {} : data),
    });
    let body = null;
    try { body = await response.json(); } catch (_) { body = null; }
    return { ok: response.ok, status: response.status, body };
  }

  async function getJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    let body = null;
    try { body = await response.json(); } catch (_) { body = null; }
    return { ok: response.ok, status: response.status, body };
  }

  // Text goes in as text: never innerHTML with a string from the server.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("data-")) node.setAttribute(key, value);
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // Follow the live journal from the id this page was rendered at. `handlers` maps a topic to
  // a function(data, id). EventSource reconnects by itself with Last-Event-ID; `reset` means
  // the journal no longer has what we missed, so the page reloads from the server.
  function live(handlers) {
    const status = document.getElementById("live-status");
    const show = (state) => { if (status) { status.dataset.state = state; status.textContent = state; } };
    const after = document.body.dataset.liveAfter || "0";
    const source = new EventSource("/live?after=" + encodeURIComponent(after));
    source.onopen = () => show("live");
    source.onerror = () => show("reconnecting");
    source.addEventListener("reset", () => { source.close(); window.location.reload(); });
    for (const [topic, handler] of Object.entries(handlers)) {
      source.addEventListener(topic, (event) => {
        document.body.dataset.liveAfter = event.lastEventId;
        handler(JSON.parse(event.data), Number(event.lastEventId));
      });
    }
    return source;
  }

  return { csrf, post, getJson, el, live };
})();
window.Proctor = Proctor;
