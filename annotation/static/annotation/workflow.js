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
