/* Participant question page: server-owned countdown and highlighting clues by mouse selection.
   No dependencies besides htmx (served from static files). */
(function () {
  "use strict";

  function fmt(total) {
    total = Math.max(0, Math.floor(total));
    var h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    var mm = (h ? String(m).padStart(2, "0") : String(m)), ss = String(s).padStart(2, "0");
    return h ? h + ":" + mm + ":" + ss : mm + ":" + ss;
  }

  /* The server sends the seconds left; we count down from the moment the page arrived. */
  var timerHandle = null;
  function startTimer(root) {
    var el = root.querySelector("[data-seconds-left]");
    if (!el) return;
    var endsAt = Date.now() + parseInt(el.getAttribute("data-seconds-left"), 10) * 1000;
    if (timerHandle) clearInterval(timerHandle);
    function tick() {
      var left = (endsAt - Date.now()) / 1000;
      if (left <= 0) {
        el.textContent = el.getAttribute("data-expired-text") || "0:00";
        clearInterval(timerHandle);
        document.querySelectorAll("[data-submit]").forEach(function (b) { b.disabled = true; });
        /* Let the server decide what comes next (next question or the end page) after the grace period. */
        setTimeout(function () { window.location.reload(); }, 3000);
        return;
      }
      el.textContent = fmt(left);
    }
    tick();
    timerHandle = setInterval(tick, 500);
  }

  /* Character offset of a DOM point inside the context element. */
  function offsetOf(ctx, node, offset) {
    var r = document.createRange();
    r.selectNodeContents(ctx);
    r.setEnd(node, offset);
    return r.toString().length;
  }

  function initHighlighter(box) {
    if (box.__highlighter) return;
    box.__highlighter = true;
    var ctx = box.querySelector("[data-context]");
    var list = box.querySelector("[data-highlight-list]");
    var input = box.querySelector("[data-highlights-input]");
    var empty = box.querySelector("[data-empty]");
    var q = box.closest("#question");
    var storeKey = q ? "dbstudy:" + q.getAttribute("data-attempt") + ":" + q.getAttribute("data-position") : null;
    var text = ctx.textContent;
    var spans = [];
    try { if (storeKey) spans = JSON.parse(sessionStorage.getItem(storeKey) || "[]"); } catch (e) { spans = []; }
    spans = spans.filter(function (s) { return text.slice(s.start, s.end) === s.text; });

    function render() {
      ctx.textContent = "";
      var at = 0;
      spans.forEach(function (s, i) {
        if (s.start > at) ctx.appendChild(document.createTextNode(text.slice(at, s.start)));
        var mark = document.createElement("mark");
        mark.className = "clue";
        mark.setAttribute("data-index", i);
        mark.textContent = text.slice(s.start, s.end);
        ctx.appendChild(mark);
        at = s.end;
      });
      if (at < text.length) ctx.appendChild(document.createTextNode(text.slice(at)));
      list.textContent = "";
      spans.forEach(function (s, i) {
        var li = document.createElement("li");
        var quote = document.createElement("span");
        quote.textContent = "\u201c" + s.text + "\u201d ";
        var rm = document.createElement("button");
        rm.type = "button";
        rm.className = "remove-highlight";
        rm.setAttribute("aria-label", "remove");
        rm.textContent = "\u00d7";
        rm.addEventListener("click", function () { spans.splice(i, 1); save(); });
        li.appendChild(quote);
        li.appendChild(rm);
        list.appendChild(li);
      });
      if (empty) empty.hidden = spans.length > 0;
      input.value = JSON.stringify(spans);
    }

    function save() {
      if (storeKey) { try { sessionStorage.setItem(storeKey, JSON.stringify(spans)); } catch (e) { /* private mode */ } }
      render();
    }

    function add(start, end) {
      while (start < end && /\s/.test(text[start])) start++;
      while (end > start && /\s/.test(text[end - 1])) end--;
      if (end <= start) return;
      /* Overlapping or touching highlights merge into one. */
      var merged = [];
      spans.forEach(function (s) {
        if (s.end < start || s.start > end) merged.push(s);
        else { start = Math.min(start, s.start); end = Math.max(end, s.end); }
      });
      merged.push({ start: start, end: end, text: text.slice(start, end) });
      merged.sort(function (a, b) { return a.start - b.start; });
      spans = merged;
      save();
    }

    ctx.addEventListener("mouseup", function () {
      var sel = window.getSelection();
      if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
      var range = sel.getRangeAt(0);
      if (!ctx.contains(range.startContainer) || !ctx.contains(range.endContainer)) return;
      var start = offsetOf(ctx, range.startContainer, range.startOffset);
      var end = offsetOf(ctx, range.endContainer, range.endOffset);
      sel.removeAllRanges();
      add(Math.min(start, end), Math.max(start, end));
    });

    var form = box.querySelector("[data-answer-form]");
    if (form) form.addEventListener("submit", function () { input.value = JSON.stringify(spans); });
    if (form && storeKey) {
      form.addEventListener("htmx:afterRequest", function (ev) {
        if (ev.detail.successful) { try { sessionStorage.removeItem(storeKey); } catch (e) { /* ignore */ } }
      });
    }
    render();
  }

  function init(root) {
    root = root || document;
    startTimer(root);
    root.querySelectorAll("[data-highlighter]").forEach(initHighlighter);
    if (root.matches && root.matches("[data-highlighter]")) initHighlighter(root);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (ev) { init(ev.detail.elt); });
})();
