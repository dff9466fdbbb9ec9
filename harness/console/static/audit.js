// Audit pages: when the live journal says the log or a run changed, offer a refresh (the page
// is rendered server-side; a reload re-reads the log, so nothing is missed).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  if (!window.Proctor) return;
  const notice = document.getElementById("audit-changed");
  const show = () => { if (notice) notice.hidden = false; };
  window.Proctor.live({ audit: show, run: show });
});
