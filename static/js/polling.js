/* Every researcher page that refreshes a part of itself (htmx, hx-trigger="every ..."): the monitor, the run list
   and a run's progress, the judge runs and a judge's quality card. A refresh waits while the keyboard focus or the
   pointer is inside the part, so that a control being used is not swapped away under the keyboard or the mouse.
   A form with data-confirm asks first (Expire ends a participant's attempt). No inline script (CSP). */
(function () {
  "use strict";
  var pointerOver = null;
  document.addEventListener("pointerover", function (ev) { pointerOver = ev.target; });
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var part = ev.detail.elt;
    if (!part || !/^\s*every\s/.test(part.getAttribute("hx-trigger") || "")) return;
    if (part.contains(document.activeElement) || (pointerOver && part.contains(pointerOver))) ev.preventDefault();
  });
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var question = form && form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) ev.preventDefault();
  }, true);
})();
