// Decision forms that post through Proctor.post and a list that follows the live journal.
// The server renders the list (Jinja autoescape); this script re-fetches that fragment when
// the page's topic is published and swaps it in, keeping any card the operator is editing.
// Server strings are never assigned to innerHTML: notices go in with textContent.
"use strict";

const ProctorLiveForms = (() => {
  const FRESH_MS = 2000;  // a notice older than this is about an earlier state of the list
  let noticeAt = 0;

  function notice(root, text, ok, kind) {
    const node = root.querySelector("#page-notice");
    if (!node) return;
    noticeAt = Date.now();
    node.classList.remove("stale");
    node.hidden = false;
    node.textContent = text;
    node.dataset.kind = kind || "";
    node.classList.toggle("ok", ok);
    node.classList.toggle("bad", !ok);
  }

  function payload(form) {
    const data = {};
    for (const [key, value] of new FormData(form).entries()) {
      if (key === "csrf" || typeof value !== "string") continue;
      if (key.startsWith("set.") && value === "") continue;  // only the changed keys
      data[key] = value;
    }
    return data;
  }

  function follow(root) {
    const listsId = root.dataset.lists;
    let running = false;
    let again = false;

    function editing(card) {
      return card.dataset.dirty === "1" || card.contains(document.activeElement)
        || card.querySelector("details[open]") !== null;
    }

    async function refresh() {
      if (running) { again = true; return; }
      running = true;
      try {
        do {
          again = false;
          const response = await fetch(root.dataset.fragment, {
            credentials: "same-origin", headers: { Accept: "text/html" },
          });
          if (!response.ok) { notice(root, "could not refresh the list (" + response.status + "): reload the page", false, "refresh"); return; }
          const parsed = new DOMParser().parseFromString(await response.text(), "text/html");
          const fresh = parsed.getElementById(listsId);
          const current = document.getElementById(listsId);
          if (!fresh || !current) return;
          for (const card of current.querySelectorAll("[data-card]")) {
            if (!editing(card)) continue;
            const twin = fresh.querySelector("#" + CSS.escape(card.id));
            if (twin) twin.replaceWith(card);  // still pending: keep what the operator typed
          }
          current.replaceWith(document.adoptNode(fresh));
          root.dispatchEvent(new CustomEvent("proctor:refreshed"));
        } while (again);
      } finally {
        running = false;
      }
    }

    root.addEventListener("input", (event) => {
      const card = event.target.closest("[data-card]");
      if (card) card.dataset.dirty = "1";
    });

    root.addEventListener("submit", async (event) => {
      const form = event.target.closest("form.decide");
      if (!form) return;
      event.preventDefault();
      const buttons = form.querySelectorAll("button");
      buttons.forEach((b) => { b.disabled = true; });
      let result;
      try {
        result = await Proctor.post(form.action, payload(form));
      } catch (_) {
        result = { ok: false, status: 0, body: { error: "the console did not answer" } };
      }
      buttons.forEach((b) => { b.disabled = false; });
      const body = result.body || {};
      const text = body.message || body.error || ("the console answered " + result.status);
      notice(root, text, result.ok, body.kind);
      const card = form.closest("[data-card]");
      if (card) {
        const own = card.querySelector(".card-notice");
        if (own) { own.hidden = false; own.textContent = text; own.classList.toggle("bad", !result.ok); }
        if (result.ok) delete card.dataset.dirty;
      }
      if (result.ok) form.reset();
      if (document.activeElement && form.contains(document.activeElement)) document.activeElement.blur();
      await refresh();
    });

    const topic = root.dataset.topic;
    // Someone else changed the list: a notice about this operator's earlier action fades.
    Proctor.live({
      [topic]: () => {
        const shown = root.querySelector("#page-notice");
        if (shown && !shown.hidden && Date.now() - noticeAt > FRESH_MS) shown.classList.add("stale");
        refresh();
      },
    });
    return { refresh };
  }

  return { follow, notice };
})();
window.ProctorLiveForms = ProctorLiveForms;
