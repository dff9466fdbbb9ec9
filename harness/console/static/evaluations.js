// Evaluations pages: no topic of their own; following the journal keeps the live indicator
// honest, and a `reset` (the console restarted) reloads the page.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  if (window.Proctor) window.Proctor.live({});
});
