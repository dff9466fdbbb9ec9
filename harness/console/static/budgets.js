// The Budgets page: reset requests and confirmations, refreshed live (live_forms.js).
"use strict";

(() => {
  const root = document.getElementById("budgets");
  if (root) ProctorLiveForms.follow(root);
})();
