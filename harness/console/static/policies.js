// The Policies page: validate the draft as it is typed, explain a sample call, save with the
// digest the page loaded (a file changed meanwhile is refused, never overwritten), and hear
// other pages' saves on the live journal. Every server string goes in as text (Proctor.el).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const P = window.Proctor;
  const root = document.getElementById("policies");
  if (!P || !root) return;
  const $ = (id) => document.getElementById(id);
  const text = $("policy-text");
  const saveButton = $("policy-save");
  const VALIDATE_DELAY_MS = 300;

  const state = {
    digest: root.dataset.digest || null, // the file's digest this draft is based on
    loadedText: text.value,              // the file's text as loaded (to tell a draft from it)
    editable: root.dataset.editable === "true",
    validateSeq: 0,                      // only the latest validation's answer is shown
    saving: false,
    heldEvents: [],                      // live events that arrived during our own save
    changedBy: null,                     // who saved the file since this page loaded it
  };

  // --- the caret and the lines ---------------------------------------------------------------
  function caretLine() {
    return text.value.slice(0, text.selectionStart).split("\n").length;
  }
  function showCaretLine() { $("caret-line").textContent = "line " + caretLine(); }
  function goToLine(line) {
    const lines = text.value.split("\n");
    const target = Math.min(Math.max(line, 1), lines.length);
    let offset = 0;
    for (let i = 0; i < target - 1; i += 1) offset += lines[i].length + 1;
    text.focus();
    text.setSelectionRange(offset, offset + lines[target - 1].length);
    // Scroll so the line is visible: the textarea's line height times the lines above it.
    const lineHeight = parseFloat(getComputedStyle(text).lineHeight) || 18;
    text.scrollTop = Math.max(0, (target - 3) * lineHeight);
    showCaretLine();
  }
  for (const event of ["keyup", "click", "select", "focus"]) text.addEventListener(event, showCaretLine);

  // --- problems --------------------------------------------------------------------------------
  function problemItem(problem) {
    const where = problem.line === null || problem.line === undefined ? "file" : "line " + problem.line;
    const button = P.el("button", { type: "button", class: "problem", "data-line": problem.line ?? "" },
      P.el("span", { class: "where", text: where }), " ",
      P.el("span", { class: "badge", text: problem.kind }), " ",
      P.el("span", { class: "what", text: problem.message }));
    return P.el("li", {}, button);
  }
  function fillProblems(list, problems, notes) {
    list.replaceChildren(...problems.map(problemItem),
      ...(notes || []).map((note) => P.el("li", { class: "note muted", text: note })));
  }
  // One listener per list: clicking a problem with a line moves the caret there.
  for (const id of ["validation-problems", "save-problems"]) {
    $(id).addEventListener("click", (event) => {
      const button = event.target.closest("button.problem");
      if (button && button.dataset.line) goToLine(Number(button.dataset.line));
    });
  }

  // --- validation as you type ----------------------------------------------------------------
  function showValidation(result) {
    const status = $("validation-status");
    if (result.ok) {
      const rules = result.rules === 1 ? "1 rule" : result.rules + " rules";
      status.replaceChildren(P.el("span", { class: "badge ok", text: "valid" }),
        " " + rules + ", policy ", P.el("code", { class: "digest", text: result.policy_digest }));
    } else {
      const count = result.problems.length;
      status.replaceChildren(P.el("span", { class: "badge bad",
        text: count + (count === 1 ? " problem" : " problems") }));
    }
    fillProblems($("validation-problems"), result.problems, result.notes);
  }
  function showValidationError(message) {
    $("validation-status").replaceChildren(P.el("span", { class: "badge bad", text: "not checked" }),
      " " + message);
  }
  let validateTimer = null;
  async function validateNow() {
    const seq = ++state.validateSeq;
    $("validation-status").dataset.state = "checking";
    let response;
    try {
      response = await P.post("/policies/validate", { text: text.value });
    } catch (error) {
      if (seq === state.validateSeq) showValidationError("the console did not answer: " + error);
      return;
    }
    if (seq !== state.validateSeq) return; // a later keystroke's check is on its way
    $("validation-status").dataset.state = "done";
    if (response.ok && response.body) showValidation(response.body);
    else showValidationError(errorText(response));
  }
  text.addEventListener("input", () => {
    clearTimeout(validateTimer);
    $("validation-status").dataset.state = "pending";
    validateTimer = setTimeout(validateNow, VALIDATE_DELAY_MS);
  });

  // --- save ------------------------------------------------------------------------------------
  function errorText(response) {
    const body = response.body || {};
    return body.message || body.error || "the console answered " + response.status;
  }
  function adopt(digest, newText) {
    state.digest = digest;
    root.dataset.digest = digest || "";
    $("policy-digest").textContent = digest || "none";
    if (newText !== undefined) state.loadedText = newText;
  }
  function showSave(kind, message, problems, diff) {
    const box = $("save-result");
    box.hidden = false;
    box.dataset.outcome = kind;
    $("save-message").className =
      kind === "saved" || kind === "unchanged" ? "ok" : kind === "pending" ? "muted" : "error";
    $("save-message").textContent = message;
    fillProblems($("save-problems"), problems || []);
    const pre = $("save-diff");
    pre.hidden = !diff;
    pre.replaceChildren(...(diff || "").split("\n").filter((line, i, all) => i < all.length - 1 || line)
      .map((line) => P.el("span", { class: diffClass(line), text: line + "\n" })));
  }
  function diffClass(line) {
    if (line.startsWith("+++") || line.startsWith("---")) return "file";
    if (line.startsWith("@@")) return "hunk";
    if (line.startsWith("+")) return "add";
    if (line.startsWith("-")) return "del";
    return "same";
  }
  async function save() {
    if (!state.editable || state.saving) return;
    state.saving = true;
    saveButton.disabled = true;
    showSave("pending", "saving..."); // never leave the last save's result up as this one's
    const draft = text.value;
    let response;
    try {
      response = await P.post("/policies/save", { text: draft, digest: state.digest });
    } catch (error) {
      showSave("error", "the console did not answer: " + error + "; nothing is known to be saved");
      finishSave();
      return;
    }
    const body = response.body || {};
    if (body.outcome === "saved") {
      adopt(body.digest, draft);
      hideChanged();
      showSave("saved", body.message + " (file digest " + body.digest + ")", [], body.diff);
    } else if (body.outcome === "unchanged") {
      adopt(body.digest, draft);
      showSave("unchanged", body.message);
    } else if (body.reason === "conflict" || body.reason === "missing" || body.reason === "unreadable") {
      showSave("conflict", body.message);
      const by = state.changedBy ? " (by " + state.changedBy + ")" : "";
      showChanged(body.reason === "conflict"
        ? "The policy file changed since this page loaded it" + by + ": your save was refused. " +
          "Reload it, then apply your change again."
        : "The policy file cannot be read now: your save was refused.");
    } else if (body.outcome === "refused") {
      showSave(body.reason || "refused", body.message, body.problems);
    } else {
      showSave("error", errorText(response));
    }
    finishSave();
  }
  function finishSave() {
    state.saving = false;
    saveButton.disabled = !state.editable;
    const held = state.heldEvents.splice(0);
    for (const data of held) onPolicyChanged(data);
  }
  saveButton.addEventListener("click", save);

  // --- another page's save, and reloading ----------------------------------------------------
  function showChanged(message) {
    $("policy-changed-text").textContent = message + " ";
    $("policy-changed").hidden = false;
  }
  function hideChanged() { $("policy-changed").hidden = true; }
  function onPolicyChanged(data) {
    if (state.saving) { state.heldEvents.push(data); return; }
    if (data.digest && data.digest === state.digest) return; // our own save, or already loaded
    state.changedBy = data.operator || "someone";
    showChanged("The policy changed (by " + state.changedBy + "): reload it before editing; " +
      "saving this draft would be refused.");
  }
  async function reload() {
    const response = await P.getJson("/policies/current");
    if (!response.ok || !response.body) {
      showChanged("Could not reload: " + errorText(response) + ".");
      return;
    }
    const loaded = response.body;
    const draft = text.value;
    if (draft !== state.loadedText) keepDraft(draft);
    text.value = loaded.text ?? "";
    adopt(loaded.digest, text.value);
    state.changedBy = null;
    hideChanged();
    $("save-result").hidden = true;
    if (loaded.validation) showValidation(loaded.validation);
    else showValidationError(loaded.problem || "the file cannot be read");
    showCaretLine();
  }
  // A reload replaces the editor's text; the draft it held stays on the page to copy from.
  function keepDraft(draft) {
    const old = document.getElementById("discarded-draft");
    if (old) old.remove();
    const details = P.el("details", { id: "discarded-draft", class: "card" },
      P.el("summary", { text: "Your draft from before the reload (not saved)" }),
      P.el("pre", { class: "mono", text: draft }));
    $("policy-changed").after(details);
  }
  $("policy-reload").addEventListener("click", reload);
  P.live({ policy: onPolicyChanged });

  // --- explain ---------------------------------------------------------------------------------
  const form = $("explain-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const fields = new FormData(form);
    const request = {
      tool: fields.get("tool") || "",
      arguments: fields.get("arguments") || "{}",
      actor: fields.get("actor") || "",
      agent: fields.get("agent") || "",
      team: fields.get("team") || "",
      tokens_used: fields.get("tokens_used") || "0",
      tainted: fields.get("tainted") === "on",
      draft: fields.get("under") === "draft" ? text.value : null,
    };
    const out = $("explain-result");
    out.hidden = false;
    out.replaceChildren(P.el("p", { class: "muted", text: "explaining..." }));
    let response;
    try {
      response = await P.post("/policies/explain", request);
    } catch (error) {
      out.replaceChildren(P.el("p", { class: "error", text: "the console did not answer: " + error }));
      return;
    }
    out.replaceChildren(...explanation(response));
  });

  function explanation(response) {
    const body = response.body || {};
    if (!response.ok) return [P.el("p", { class: "error", text: errorText(response) })];
    if (!body.ok) {
      const list = P.el("ul", { class: "problems" });
      fillProblems(list, body.problems || []);
      return [P.el("p", { class: "error", text: body.error }), list];
    }
    const e = body.explanation;
    const facts = P.el("dl", { class: "facts" },
      P.el("dt", { text: "decision" }), P.el("dd", {}, P.el("span", { class: "badge " + e.effect, id: "explain-effect", text: e.effect })),
      P.el("dt", { text: "reason" }), P.el("dd", { id: "explain-reason", class: "mono", text: e.reason }));
    if (e.rule_ids !== undefined) {
      facts.append(
        P.el("dt", { text: "decisive rules" }), P.el("dd", { id: "explain-rule-ids", class: "mono", text: e.rule_ids.join(", ") || "none" }),
        P.el("dt", { text: "matched rules" }), P.el("dd", { id: "explain-matched", class: "mono", text: e.matched_rule_ids.join(", ") || "none" }),
        P.el("dt", { text: "tool known" }), P.el("dd", { text: e.known ? "yes" : "no (not registered)" }),
        P.el("dt", { text: "policy" }), P.el("dd", { class: "mono", text: e.policy_digest }));
    }
    facts.append(P.el("dt", { text: "message" }), P.el("dd", { id: "explain-message", text: e.message }));
    const parts = [facts];
    if (e.rules) {
      const active = e.rules.filter((rule) => rule.status !== "not_matched" && rule.status !== "disabled");
      const rows = active.map((rule) => P.el("tr", {},
        P.el("td", { class: "mono", text: rule.id }),
        P.el("td", {}, P.el("span", { class: "badge " + rule.effect, text: rule.effect })),
        P.el("td", { text: rule.status }),
        P.el("td", { class: "mono", text: rule.error || (rule.failed_arg ? "argument " + rule.failed_arg : "") })));
      parts.push(P.el("table", { class: "rules" },
        P.el("thead", {}, P.el("tr", {}, P.el("th", { text: "rule" }), P.el("th", { text: "effect" }),
          P.el("th", { text: "outcome" }), P.el("th", { text: "detail" }))),
        P.el("tbody", {}, ...rows)));
      parts.push(P.el("p", { class: "muted", text: (e.rules.length - active.length) + " other rule(s) did not apply to this tool." }));
    }
    return parts;
  }
});
