// The Agent page: follows the live journal and redraws the selected turn and the list of turns
// from the server's JSON (/agent/<run_id>.json, /agent.json). Every server string goes in as
// text (Proctor.el / textContent), never as HTML.
"use strict";

(() => {
  const root = document.getElementById("agent");
  if (!root) return;
  const el = Proctor.el;
  const runId = root.dataset.runId || "";
  // The server says what time it is, so a countdown does not depend on this machine's clock.
  const skew = Date.parse(root.dataset.serverNow) - Date.now();
  const clock = (iso) => (iso || "").slice(11, 19);

  // Ctrl/Cmd+Enter sends the request.
  const box = document.getElementById("agent-request");
  if (box) {
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        box.form.requestSubmit();
      }
    });
  }

  // -- the turn ---------------------------------------------------------------------------------

  function lastSeq() {
    const rows = document.querySelectorAll("#turn-events > li[data-seq]");
    return rows.length ? Number(rows[rows.length - 1].dataset.seq) : 0;
  }

  function eventRow(event) {
    const line = el("div", { class: "event-line" },
      el("span", { class: "event-seq", text: String(event.seq) }),
      el("span", { class: "badge " + event.badge, text: event.label }),
      event.tool ? el("code", { class: "event-tool", text: event.tool }) : null,
      event.call_id ? el("span", { class: "muted mono", text: event.call_id }) : null);
    const row = el("li", { class: "event kind-" + event.kind, "data-seq": String(event.seq), "data-name": event.name }, line);
    if (event.kind === "model") {
      const model = el("div", { class: "event-model" });
      if (event.text) model.append(el("p", { class: "model-text", text: event.text }));
      for (const [name, args] of event.calls || []) {
        model.append(el("div", { class: "model-call" }, "calls ", el("code", { text: name }), " ", el("code", { class: "muted", text: args })));
      }
      row.append(model);
    }
    if (event.facts && event.facts.length) {
      const facts = el("dl", { class: "facts" });
      for (const [key, value] of event.facts) facts.append(el("dt", { text: key }), el("dd", { text: value }));
      row.append(facts);
    }
    return row;
  }

  function heldBanner(turn) {
    const held = turn.held;
    const banner = el("section", { class: "card held-banner", id: "held-banner", "data-approval-id": held.approval_id, "data-held-status": held.status || "" });
    if (held.status === "pending") {
      const rules = held.rule_ids.length ? " by " + held.rule_ids.join(", ") : "";
      const risk = held.risk ? " (risk " + held.risk + ")" : "";
      banner.append(
        el("h2", {}, el("span", { class: "pulse" }), "Waiting for approval"),
        el("p", {}, "The call ", el("code", { text: held.tool }), " is held as ",
          el("strong", { class: "mono", id: "held-approval-id", text: held.approval_id }),
          rules + risk + ". It has not run. The turn continues by itself once a reviewer other than " +
          (held.proposed_by || turn.operator) + " approves, edits or rejects it."));
    } else {
      banner.append(
        el("h2", { text: "Decided: " + (held.status || "unknown") }),
        el("p", {}, "The request ", el("strong", { class: "mono", id: "held-approval-id", text: held.approval_id }),
          " for ", el("code", { text: held.tool }), " was decided; the turn is continuing." + (held.error ? " " + held.error : "")));
    }
    banner.append(el("pre", { class: "held-arguments", text: held.arguments_text }));
    const row = el("div", { class: "row" });
    if (held.status === "pending" && held.expires_at) {
      row.append(el("span", {}, "Expires in ", el("strong", { class: "countdown", "data-expires-at": held.expires_at, text: clock(held.expires_at) + " UTC" })));
    }
    row.append(el("a", { class: "button push", href: "/approvals", text: "Decide on the Approvals page" }));
    banner.append(row);
    return banner;
  }

  function answerCard(turn) {
    const card = el("section", { class: "card turn-answer " + turn.status_badge },
      el("h2", { text: "Answer" }),
      el("p", { id: "turn-final-answer", class: "answer-text", text: turn.final_answer || "(no answer)" }));
    if (turn.detail) card.append(el("p", { class: "muted", text: turn.detail }));
    return card;
  }

  function messageRow(message) {
    const role = message.role + (message.tool_call_id ? " · " + message.tool_call_id : "");
    const row = el("li", { class: "message role-" + message.role }, el("span", { class: "message-role", text: role }));
    if (message.text) row.append(el("pre", { class: "message-text", text: message.text }));
    for (const [name, args] of message.calls || []) {
      row.append(el("div", { class: "message-call" }, el("code", { text: name }), " ", el("code", { class: "muted", text: args })));
    }
    return row;
  }

  function drawTurn(turn) {
    const events = document.getElementById("turn-events");
    let seq = lastSeq();
    for (const event of turn.events) {
      if (event.seq > seq) { events.append(eventRow(event)); seq = event.seq; }
    }
    const status = document.getElementById("turn-status");
    status.className = "badge big " + turn.status_badge;
    status.dataset.status = turn.status;
    status.textContent = turn.status_label;
    document.getElementById("turn-held").replaceChildren(...(turn.held ? [heldBanner(turn)] : []));
    document.getElementById("turn-answer").replaceChildren(...(turn.finished ? [answerCard(turn)] : []));
    document.getElementById("turn-transcript").replaceChildren(...turn.transcript.map(messageRow));
    document.getElementById("turn-transcript-count").textContent = String(turn.transcript.length);
    root.dataset.status = turn.status;
    tick();
  }

  // -- the list of turns ------------------------------------------------------------------------

  function drawRuns(runs) {
    const list = document.getElementById("agent-runs");
    list.replaceChildren(...runs.map((run) => {
      const selected = run.run_id === runId;
      return el("li", { "data-run-id": run.run_id, class: selected ? "selected" : null, "aria-current": selected ? "true" : null },
        el("a", { href: "/agent/" + encodeURIComponent(run.run_id) },
          el("span", { class: "agent-run-request", text: run.request }),
          el("span", { class: "agent-run-meta" },
            el("span", { class: "badge " + run.badge, text: run.status_label }),
            el("span", { class: "muted", text: run.operator + " · " + clock(run.started_at) }))));
    }));
    const empty = document.getElementById("agent-runs-empty");
    if (empty) empty.hidden = runs.length > 0;
  }

  // -- reading the server again, one request at a time ------------------------------------------

  // `refresher(url, draw)`: call it as often as events come; it fetches at most one at a time,
  // and once more after the one in flight when asked meanwhile, so the last state always shows.
  function refresher(url, draw) {
    let busy = false;
    let again = false;
    const run = async () => {
      if (busy) { again = true; return; }
      busy = true;
      try {
        do {
          again = false;
          const answer = await Proctor.getJson(url);
          if (answer.ok && answer.body) draw(answer.body);
        } while (again);
      } catch (_) {
        // Offline: the stream's reconnect asks again.
      } finally {
        busy = false;
      }
    };
    return run;
  }

  const refreshTurn = runId ? refresher("/agent/" + encodeURIComponent(runId) + ".json", drawTurn) : () => {};
  const refreshRuns = refresher("/agent.json", (body) => drawRuns(body.runs));

  // -- expiry countdowns --------------------------------------------------------------------------

  function tick() {
    for (const node of document.querySelectorAll("[data-expires-at]")) {
      const left = Math.round((Date.parse(node.dataset.expiresAt) - (Date.now() + skew)) / 1000);
      if (Number.isNaN(left)) continue;
      node.textContent = left <= 0 ? "now (expired)" : Math.floor(left / 60) + "m " + String(left % 60).padStart(2, "0") + "s";
      node.classList.toggle("urgent", left < 60);
    }
  }
  tick();
  setInterval(tick, 1000);

  // -- live -------------------------------------------------------------------------------------

  // Follow the journal from the id this page's content was read at.
  document.body.dataset.liveAfter = root.dataset.hubId || "0";
  const source = Proctor.live({
    run: (data) => {
      if (runId && data.run_id === runId) refreshTurn();
      if (data.kind === "status") refreshRuns();
    },
  });
  // After a dropped connection the stream resends what it missed; reading again on every
  // (re)open also covers whatever happened while nothing was listening.
  let opened = false;
  source.addEventListener("open", () => {
    if (opened) { refreshTurn(); refreshRuns(); }
    opened = true;
  });
})();
