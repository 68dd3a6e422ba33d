// Hovering a date shows it in the viewer's local time (the page prints UTC; no inline script).
(function () {
  function localise(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var at = new Date(el.getAttribute("datetime"));
      if (!isNaN(at)) { el.title = at.toLocaleString() + " (your local time)"; }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localise(document); });
  document.addEventListener("htmx:afterSettle", function (event) { localise(event.target); });
})();
