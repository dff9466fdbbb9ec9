// The Approvals page: decisions and live refresh (live_forms.js), and the expiry countdowns.
"use strict";

(() => {
  const root = document.getElementById("approvals");
  if (!root) return;
  const lists = ProctorLiveForms.follow(root);

  function left(ms) {
    if (ms <= 0) return "expired";
    const s = Math.floor(ms / 1000);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return "in " + (h ? h + "h " : "") + (h || m ? m + "m " : "") + r + "s";
  }

  // A request that runs out of time is expired by the server when the list is fetched, so
  // the page asks once when a countdown reaches zero (other tabs hear it from the watch).
  function tick() {
    const now = Date.now();
    let lapsed = false;
    for (const node of root.querySelectorAll(".countdown[data-expires]")) {
      const at = Date.parse(node.dataset.expires);
      if (Number.isNaN(at)) continue;
      node.textContent = "(" + left(at - now) + ")";
      node.classList.toggle("error", at - now <= 0);
      if (at - now <= 0 && !node.dataset.lapsed) { node.dataset.lapsed = "1"; lapsed = true; }
    }
    if (lapsed) lists.refresh();
  }
  tick();
  setInterval(tick, 1000);
  root.addEventListener("proctor:refreshed", tick);
})();
