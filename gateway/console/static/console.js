// holon console: the one script (no inline script anywhere; CSP script-src 'self').
// Copyright the holon authors, Apache-2.0 (the project's licence); no third-party code.
// While an eval runs, its page polls /ui/evals/{id}/progress every 2 s and updates
// the counts in place (textContent only); once the eval stops, the page reloads to
// show the result and the report.
"use strict";
(function () {
  var section = document.getElementById("progress");
  if (!section || section.dataset.status !== "running") {
    return;
  }
  var url = "/ui/evals/" + encodeURIComponent(section.dataset.eval) + "/progress";
  function set(name, value) {
    var node = section.querySelector('[data-field="' + name + '"]');
    if (node && value !== undefined && value !== null) {
      node.textContent = String(value);
    }
  }
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (body) {
        if (!body) {
          return;
        }
        var progress = body.progress || {};
        set("done", progress.done);
        set("running", progress.running);
        set("pending", progress.pending);
        set("passed", (body.spent || {}).passed);
        set("cost_usd", (body.spent || {}).cost_usd);
        set("status", body.status);
        var bar = section.querySelector("progress");
        var total = (progress.done || 0) + (progress.running || 0) + (progress.pending || 0);
        if (bar && total > 0) {
          bar.value = (100 * (progress.done || 0)) / total;
        }
        if (body.status !== "running") {
          window.location.reload();
          return;
        }
        window.setTimeout(poll, 2000);
      })
      .catch(function () {
        window.setTimeout(poll, 5000);
      });
  }
  window.setTimeout(poll, 2000);
})();
