// The Approvals page: decisions and live refresh (live_forms.js), and the expiry countdowns.
"use strict";

(() => {
  const root = document.getElementById("approvals");
  if (!root) return;
  ProctorLiveForms.follow(root);

  function left(ms) {
    if (ms <= 0) return "expired";
    const s = Math.floor(ms / 1000);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return "in " + (h ? h + "h " : "") + (h || m ? m + "m " : "") + r + "s";
  }

  function tick() {
    const now = Date.now();
    for (const node of root.querySelectorAll(".countdown[data-expires]")) {
      const at = Date.parse(node.dataset.expires);
      if (!Number.isNaN(at)) {
        node.textContent = "(" + left(at - now) + ")";
        node.classList.toggle("error", at - now <= 0);
      }
    }
  }
  tick();
  setInterval(tick, 1000);
  root.addEventListener("proctor:refreshed", tick);
})();
