/* Annotation workflow: keyboard shortcuts and picking clue text in the context. No dependencies besides htmx. */
(function () {
  "use strict";

  function typing(event) {
    var t = event.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) && t.type !== "checkbox" && t.type !== "radio";
  }

  /* Shortcuts: any element with data-key="x" is clicked when x is pressed (outside text fields). */
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) { return; }
    var target = document.querySelector('[data-key="' + CSS.escape(event.key.toLowerCase()) + '"]');
    if (!target) { return; }
    event.preventDefault();
    target.click();
  });

  /* Draft autosaves (rewrite, clue graph) carry their page's stamp (the form's draft_page) and their order within
     the page: the server keeps a save only when it is newer than the draft it has, so a request that arrives late
     (sent before a reload, or beside a newer one) never puts older work back. */
  var draftSeq = 0;
  document.addEventListener("htmx:configRequest", function (event) {
    var parameters = event.detail.parameters;
    if (!parameters || !parameters.draft_page) { return; }
    draftSeq += 1;
    parameters.draft_seq = String(draftSeq);
  });

  /* Text typed within the autosave's delay is not lost when the page is left or reloaded: on pagehide a form with
     unsent changes sends its draft once more (sendBeacon, the same address and fields as the autosave). A submit
     (Save) sends the text itself. */
  var unsent = null;
  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest("form[hx-post][id$='-form']");
    if (form && form.querySelector("[name=draft_page]")) { unsent = form; }
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (unsent && event.detail.elt === unsent) { unsent = null; }
  });
  document.addEventListener("submit", function () { unsent = null; });
  window.addEventListener("pagehide", function () {
    if (!unsent || !navigator.sendBeacon) { return; }
    var data = new FormData(unsent);
    draftSeq += 1;
    data.set("draft_seq", String(draftSeq));
    navigator.sendBeacon(unsent.getAttribute("hx-post"), data);
    unsent = null;
  });

  /* Clue-graph editor: its row buttons redraw the whole editor; the keyboard focus goes where the change is (the new
     row's first field, the row after a removed one, else the add button), not back to the top of the page. */
  var editAction = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    editAction = elt && elt.closest && elt.closest("#cg-editor") && elt.name === "action" ? elt.value : null;
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!editAction || !document.getElementById("cg-editor")) { return; }
    var parts = editAction.split(":"), kind = parts[0], index = Number(parts[1] || 0), target = null;
    var rows = function (id) { return document.querySelectorAll("#" + id + " > li"); };
    if (kind === "add_clue" || kind === "add_step") {
      var added = rows(kind === "add_clue" ? "clue-rows" : "step-rows");
      target = added.length ? added[added.length - 1].querySelector("input:not([type=hidden])") : null;
    } else if (kind === "remove_clue" || kind === "remove_step") {
      var left = rows(kind === "remove_clue" ? "clue-rows" : "step-rows");
      var row = left[Math.min(index, left.length - 1)];
      target = row ? row.querySelector("input:not([type=hidden])")
                   : document.getElementById(kind === "remove_clue" ? "add-clue" : "add-step");
    }
    editAction = null;
    if (target) { target.focus(); }
  });

  /* Clue-graph screen: "Pick in context" arms a clue; selecting text in the context replaces it. */
  var armed = null;

  function offsetWithin(root, node, offset) {
    var range = document.createRange();
    range.setStart(root, 0);
    range.setEnd(node, offset);
    return range.toString().length;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-pick-clue]");
    if (!button) { return; }
    armed = button.getAttribute("data-pick-clue");
    var ctx = document.getElementById("cg-context");
    if (ctx) { ctx.classList.add("picking"); }
    var hint = document.getElementById("pick-hint");
    if (hint) {  // the page's words (translated), with the clue's number for {n}
      var words = hint.getAttribute("data-text") || "Select the words of clue {n} in the context.";
      hint.textContent = words.replace("{n}", String(Number(armed) + 1));
    }
  });

  document.addEventListener("mouseup", function () {
    var ctx = document.getElementById("cg-context");
    if (armed === null || !ctx) { return; }
    var selection = window.getSelection();
    if (!selection || selection.isCollapsed || selection.rangeCount === 0) { return; }
    var range = selection.getRangeAt(0);
    if (!ctx.contains(range.startContainer) || !ctx.contains(range.endContainer)) { return; }
    document.getElementById("fix-clue").value = armed;
    document.getElementById("fix-start").value = offsetWithin(ctx, range.startContainer, range.startOffset);
    document.getElementById("fix-end").value = offsetWithin(ctx, range.endContainer, range.endOffset);
    document.getElementById("fix-text").value = selection.toString();
    armed = null;
    ctx.classList.remove("picking");
    selection.removeAllRanges();
    document.getElementById("fix-selection").click();
  });
})();
