// Live refresh: while agents run, parts of a page marked data-live are fetched again when the
// store changes (a small JSON stamp is polled; no framework, no inline script).
(function () {
  "use strict";
  var live = document.querySelectorAll("[data-live]");
  if (!live.length) { return; }
  var note = document.getElementById("live");
  if (note) { note.hidden = false; }
  // The stamp of what the page shows (a change made between rendering it and the first poll must
  // refresh it too); a page without one starts from its first poll.
  var stamp = live[0].getAttribute("data-stamp");
  var busy = false;
  function refresh() {
    return fetch(location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        // The sessions ticked to compare stay ticked in the fresh list.
        var ticked = {};
        document.querySelectorAll("input[name=s]:checked").forEach(function (box) { ticked[box.value] = true; });
        fresh.querySelectorAll("input[name=s]").forEach(function (box) {
          if (ticked[box.value]) { box.setAttribute("checked", ""); }
        });
        live.forEach(function (el) {
          var next = el.id ? fresh.getElementById(el.id) : null;
          if (next) { el.replaceWith(next); }
        });
        live = document.querySelectorAll("[data-live]");
      });
  }
  function poll() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch("/api/changes", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        var changed = stamp !== null && data.stamp !== stamp;
        stamp = data.stamp;
        return changed ? refresh() : null;
      })
      .catch(function () { /* the view may be restarting: try again later */ })
      .then(function () { busy = false; });
  }
  poll();
  setInterval(poll, 2000);
})();
