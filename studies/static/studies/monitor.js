/* The study monitor (researchers): its live part refreshes every 5 s (htmx). A refresh waits while the focus or the
   pointer is inside it, so that a button being used (+10 min, Expire) is not swapped away under the keyboard or
   the mouse; a form with data-confirm asks first (Expire ends a participant's attempt). No inline script (CSP). */
(function () {
  "use strict";
  var pointerInside = false;
  document.addEventListener("pointerover", function (ev) {
    var live = document.getElementById("live");
    pointerInside = !!(live && live.contains(ev.target));
  });
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var live = document.getElementById("live");
    if (!live || ev.detail.elt !== live) return;
    if (pointerInside || live.contains(document.activeElement)) ev.preventDefault();
  });
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var question = form && form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) ev.preventDefault();
  }, true);
})();
