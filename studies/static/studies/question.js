/* Participant pages: the server-owned countdown (sticky, warned at 5 minutes and 1 minute, announced to
   screen readers), highlighting clues by mouse, touch or keyboard, and the stop confirmation.
   Pages carry no inline script or event handler (Content-Security-Policy): everything is wired here.
   No dependencies besides htmx (served from static files). */
(function () {
  "use strict";

  /* A page that answers a form (Start) names the attempt's own address: shown in the address bar instead of the
     form's, so that a reload, or the timer's reload, asks for the attempt's page rather than sending the form again. */
  var address = document.querySelector('meta[name="page-address"]');
  if (address && window.history && history.replaceState && address.content !== window.location.pathname) {
    history.replaceState(history.state, "", address.content);
  }
  /* A page kept by the browser and shown again by Back shows the attempt as it was: ask the server again. */
  window.addEventListener("pageshow", function (event) {
    if (event.persisted && document.body.classList.contains("participant")) window.location.reload();
  });

  function fmt(total) {
    total = Math.max(0, Math.floor(total));
    var h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    var mm = (h ? String(m).padStart(2, "0") : String(m)), ss = String(s).padStart(2, "0");
    return h ? h + ":" + mm + ":" + ss : mm + ":" + ss;
  }

  function stored(key) {
    if (!key) return null;
    try { return sessionStorage.getItem(key); } catch (e) { return null; }  /* private mode */
  }

  function store(key, value) {
    if (!key) return;
    try {
      if (value === null) sessionStorage.removeItem(key); else sessionStorage.setItem(key, value);
    } catch (e) { /* private mode */ }
  }

  /* Say something to screen readers through a live region (emptied first, so a repeat is heard too). */
  function say(region, text) {
    if (!region || !text) return;
    region.textContent = "";
    setTimeout(function () { region.textContent = text; }, 60);
  }

  /* ------------------------------------------------------------------ the timer */

  var THRESHOLDS = [300, 60];  /* seconds left at which the participant is warned */
  var timerHandle = null;

  /* The server sends the seconds left; we count down from the moment the page arrived. */
  function startTimer(root) {
    var el = root.querySelector("[data-seconds-left]");
    if (!el) return;
    var box = el.closest("[data-timer]");
    var warning = box ? box.querySelector("[data-timer-warning]") : null;
    var announcer = document.getElementById("timer-announcer");
    var limit = box ? parseInt(box.getAttribute("data-limit-seconds"), 10) || 0 : 0;
    var key = box ? "dbstudy:warned:" + box.getAttribute("data-warning-key") : null;
    var grace = parseInt(el.getAttribute("data-grace-seconds"), 10) || 0;
    var endsAt = Date.now() + parseInt(el.getAttribute("data-seconds-left"), 10) * 1000;
    if (timerHandle) clearInterval(timerHandle);

    /* Shown at once on every page; announced once per attempt (or question) and threshold. A threshold the
       limit never exceeded (a 2-minute question) gives no warning. */
    function warn(left) {
      var passed = THRESHOLDS.filter(function (t) { return left <= t && limit > t; });
      if (!box || !passed.length) return;
      var threshold = passed[passed.length - 1];
      var text = box.getAttribute("data-warn-" + threshold);
      box.classList.add("timer-warn");
      box.classList.toggle("timer-urgent", threshold <= 60);
      if (warning && warning.textContent !== text) { warning.hidden = false; warning.textContent = text; }
      var announced = parseInt(stored(key) || "0", 10);
      if (!announced || threshold < announced) {
        store(key, String(threshold));
        say(announcer, text);
      }
    }

    function tick() {
      var left = (endsAt - Date.now()) / 1000;
      warn(left);
      if (left <= 0) {
        /* "Time is up", not "Time left: Time is up"; and what happens now. */
        var label = box ? box.querySelector("[data-timer-label]") : null;
        if (label) label.hidden = true;
        el.textContent = el.getAttribute("data-expired-text") || "0:00";
        var note = el.getAttribute("data-expired-note") || "";
        if (box) { box.classList.add("timer-warn", "timer-urgent"); }
        if (warning) { warning.hidden = !note; warning.textContent = note; }
        say(announcer, (el.getAttribute("data-expired-text") || "") + ". " + note);
        clearInterval(timerHandle);
        document.querySelectorAll("[data-submit]").forEach(function (b) { b.disabled = true; });
        /* Let the server decide what comes next (next question or the end page) once the grace period is over. */
        setTimeout(function () { window.location.reload(); }, (grace + 1) * 1000);
        return;
      }
      el.textContent = fmt(left);
    }
    tick();
    timerHandle = setInterval(tick, 500);
  }

  /* ------------------------------------------------------------------ positions in the story */

  /* Character offset of a DOM point inside the context element. */
  function offsetOf(ctx, node, offset) {
    var r = document.createRange();
    r.selectNodeContents(ctx);
    r.setEnd(node, offset);
    return r.toString().length;
  }

  /* The DOM point of a character offset inside the context element. */
  function pointAt(ctx, offset) {
    var walker = document.createTreeWalker(ctx, NodeFilter.SHOW_TEXT);
    var node, seen = 0, last = null;
    while ((node = walker.nextNode())) {
      var length = node.nodeValue.length;
      if (offset <= seen + length) return { node: node, offset: offset - seen };
      seen += length;
      last = node;
    }
    return last ? { node: last, offset: last.nodeValue.length } : { node: ctx, offset: 0 };
  }

  /* The selection as offsets when both of its ends lie in the story, else null. */
  function selectionIn(ctx) {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || !ctx.isConnected) return null;
    if (!ctx.contains(sel.anchorNode) || !ctx.contains(sel.focusNode)) return null;
    var anchor = offsetOf(ctx, sel.anchorNode, sel.anchorOffset);
    var focus = offsetOf(ctx, sel.focusNode, sel.focusOffset);
    return { start: Math.min(anchor, focus), end: Math.max(anchor, focus), anchor: anchor, focus: focus };
  }

  function selectRange(ctx, anchor, focus) {
    var a = pointAt(ctx, anchor), f = pointAt(ctx, focus);
    window.getSelection().setBaseAndExtent(a.node, a.offset, f.node, f.offset);
  }

  /* Without Selection.modify: characters and words only. */
  function stepOffset(text, at, direction, granularity) {
    var step = direction === "forward" ? 1 : -1;
    var next = Math.min(text.length, Math.max(0, at + step));
    if (granularity === "word") {
      while (next > 0 && next < text.length && /\S/.test(text[next - (step < 0 ? 1 : 0)])) next += step;
    } else if (granularity !== "character") {
      next = step > 0 ? text.length : 0;
    }
    return next;
  }

  var KEYS = {
    ArrowLeft: ["backward", "character"], ArrowRight: ["forward", "character"],
    ArrowUp: ["backward", "line"], ArrowDown: ["forward", "line"],
    Home: ["backward", "lineboundary"], End: ["forward", "lineboundary"]
  };

  /* ------------------------------------------------------------------ whole words */

  var WORD_CHAR = /[\p{L}\p{N}\p{M}_'\u2019]/u, HAN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

  /* The words of a text as [start, end] offsets: the browser's word segmentation for the story's language
     (dictionary-based for Chinese), else runs of letters and digits with each Chinese character a word. */
  function wordsOf(text, lang) {
    var words = [];
    if (window.Intl && Intl.Segmenter) {
      try {
        var segments = new Intl.Segmenter(lang || undefined, { granularity: "word" }).segment(text);
        for (var it = segments[Symbol.iterator](), step = it.next(); !step.done; step = it.next()) {
          var seg = step.value;
          if (seg.isWordLike) words.push([seg.index, seg.index + seg.segment.length]);
        }
        return words;
      } catch (e) { words = []; }
    }
    var start = -1;
    for (var i = 0; i <= text.length; i++) {
      var ch = text[i] || "";
      var han = ch && HAN.test(ch), inWord = ch && !han && WORD_CHAR.test(ch);
      if (start >= 0 && !inWord) { words.push([start, i]); start = -1; }
      if (han) words.push([i, i + 1]);
      else if (inWord && start < 0) start = i;
    }
    return words;
  }

  /* A selection widened to whole words: an end inside a word moves to that word's edge
     ("e years after young Edmu" -> "The years after young Edmund"). */
  function snapToWords(words, start, end) {
    for (var i = 0; i < words.length; i++) {
      var w = words[i];
      if (w[0] < start && start < w[1]) start = w[0];
      if (w[0] < end && end < w[1]) end = w[1];
      if (w[0] >= end) break;
    }
    return { start: start, end: end };
  }

  /* ------------------------------------------------------------------ the highlighter */

  function initHighlighter(box) {
    if (box.__highlighter) return;
    box.__highlighter = true;
    var ctx = box.querySelector("[data-context]");
    var list = box.querySelector("[data-highlight-list]");
    var input = box.querySelector("[data-highlights-input]");
    var empty = box.querySelector("[data-empty]");
    var status = box.querySelector("[data-highlight-status]");
    var addButton = box.querySelector("[data-add-selection]");
    var preview = box.querySelector("[data-selection-preview]");
    var q = box.closest("#question");
    var storeKey = q ? "dbstudy:" + q.getAttribute("data-attempt") + ":" + q.getAttribute("data-position") : null;
    var text = ctx.textContent;
    var spans = [];
    /* The server's draft is where the highlights live (any tab, any browser that resumes the attempt); this tab
       keeps a copy only of changes it could not save yet (no connection), which are newer than the server's. */
    var draftUrl = box.getAttribute("data-draft-url");
    /* The server's revision of the draft this page shows: each save names it and is refused (412) when another
       save came first, so a save sent before a reload and arriving after the reloaded page's cannot undo it. */
    var revision = parseInt(box.getAttribute("data-draft-revision") || "0", 10) || 0;
    var local = null;
    try { local = JSON.parse(stored(storeKey) || "null"); } catch (e) { local = null; }
    /* Offsets: the server counts code points of the story (Python's str), this page UTF-16 units (a character
       outside the BMP, an emoji or a rare Chinese character, is one of the first and two of the second). Highlights
       are converted as they leave the page (the answer, a draft) and as they come from the server (a draft). */
    var pointOf = [], unitOf = [];
    for (var atUnit = 0, atPoint = 0; atUnit <= text.length; atPoint++) {
      var pair = atUnit + 1 < text.length && /[\uD800-\uDBFF]/.test(text[atUnit]) &&
        /[\uDC00-\uDFFF]/.test(text[atUnit + 1]);
      unitOf[atPoint] = atUnit;
      pointOf[atUnit] = atPoint;
      if (pair) pointOf[atUnit + 1] = atPoint + 1;  /* inside a pair: never a highlight's end (whole words only) */
      atUnit += pair ? 2 : 1;
    }
    function toServer(list) {
      return list.map(function (s) { return { start: pointOf[s.start], end: pointOf[s.end], text: s.text }; });
    }
    function fromServer(list) {
      return (Array.isArray(list) ? list : []).map(function (s) {
        var ok = s && typeof s.start === "number" && typeof s.end === "number" && s.start >= 0 && s.end < unitOf.length;
        return ok ? { start: unitOf[s.start], end: unitOf[s.end], text: s.text } : null;
      }).filter(function (s) { return s; });
    }
    try { spans = fromServer(JSON.parse(box.getAttribute("data-draft") || "[]")); } catch (e) { spans = []; }
    if (local && !Array.isArray(local) && local.unsaved && Array.isArray(local.spans)) spans = local.spans;
    spans = fitting(spans);
    var words = wordsOf(text, ctx.getAttribute("lang") || document.documentElement.lang);
    var floatBox = box.querySelector("[data-float]");
    var floatAdd = box.querySelector("[data-float-add]");
    var floatRemove = box.querySelector("[data-float-remove]");
    var floatTarget = -1;   /* the highlight the floating "Remove" stands beside */
    var floatHide = null;
    var floatPressed = false;
    var lastAdd = 0;        /* when a mouse drag last added a highlight */
    var viaKeyboard = false;
    var caret = 0;          /* the keyboard cursor, as an offset in the story */
    var pending = null;     /* the last selection in the story not added yet (touch: tapping the button may clear it) */
    var pointer = "mouse";  /* the kind of pointer that pressed on the story last */
    var pressing = false;

    var caretMark = document.createElement("span");
    caretMark.className = "kbd-caret";
    caretMark.setAttribute("aria-hidden", "true");
    caretMark.hidden = true;
    box.appendChild(caretMark);

    function quote(s) { return "\u201c" + s + "\u201d"; }

    /* The highlights that fit this story (a draft made in another language of the item does not). */
    function fitting(list) {
      return (Array.isArray(list) ? list : []).filter(function (s) {
        return s && typeof s.start === "number" && typeof s.end === "number" && text.slice(s.start, s.end) === s.text;
      });
    }

    /* With highlights on the page, the language switch asks first: they belong to this language's story. */
    function guardLanguage() {
      var switcher = document.querySelector("#language-switch form");
      var question = box.getAttribute("data-text-language");
      if (!switcher || !question) return;
      if (spans.length) switcher.setAttribute("data-confirm", question);
      else switcher.removeAttribute("data-confirm");
    }

    function render() {
      guardLanguage();
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
        var shown = document.createElement("span");
        shown.textContent = quote(s.text) + " ";
        var rm = document.createElement("button");
        rm.type = "button";
        rm.className = "remove-highlight";
        rm.setAttribute("aria-label", (box.getAttribute("data-text-remove") || "Remove") + ": " + s.text);
        rm.textContent = "\u00d7";
        rm.addEventListener("click", function () {
          remove(i);
          var buttons = list.querySelectorAll(".remove-highlight");
          (buttons[Math.min(i, buttons.length - 1)] || ctx).focus();
        });
        li.appendChild(shown);
        li.appendChild(rm);
        list.appendChild(li);
      });
      if (empty) empty.hidden = spans.length > 0;
      input.value = JSON.stringify(toServer(spans));
    }

    /* ------------------------------------------------ the draft on the server */

    var draftStatus = box.querySelector("[data-draft-status]");
    var closedNote = box.querySelector("[data-draft-closed]");
    var form = box.querySelector("[data-answer-form]");
    var saving = false, dirty = false, closed = false, answering = false, retryTimer = null, retryDelay = 2000;

    function showDraftStatus(state) {
      if (!draftStatus) return;
      draftStatus.textContent = state ? (box.getAttribute("data-text-" + state) || "") : "";
      draftStatus.setAttribute("data-state", state || "");
    }

    function csrfToken() {
      var field = form && form.querySelector("input[name=csrfmiddlewaretoken]");
      return field ? field.value : "";
    }

    /* The question is not open any more (answered in another tab, timed out): say so, save nothing more. */
    function closeDraft() {
      if (answering) return;
      closed = true;
      showDraftStatus(null);
      store(storeKey, null);
      if (closedNote) closedNote.hidden = false;
    }

    function retryLater() {
      dirty = true;
      showDraftStatus("unsaved");
      clearTimeout(retryTimer);
      retryTimer = setTimeout(sendAgain, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 30000);
    }

    /* A save tried again (after a failure, or when the connection is back), not one sent for a change just made. */
    function sendAgain() { send(true); }

    /* One request at a time; changes made meanwhile are sent when it is back. */
    function send(again) {
      if (!draftUrl || !dirty || closed || answering || saving) return;
      var retry = again === true;
      clearTimeout(retryTimer);
      saving = true;
      dirty = false;
      var body = new FormData();
      body.append("csrfmiddlewaretoken", csrfToken());
      body.append("position", box.getAttribute("data-position"));
      body.append("highlights", JSON.stringify(toServer(spans)));
      var sent = revision;
      body.append("revision", String(sent));
      fetch(draftUrl, { method: "POST", body: body, credentials: "same-origin",
                        headers: { "Accept": "application/json" } })
        .then(function (r) {
          if (r.ok || r.status === 412) {
            return r.json().then(function (data) { return { r: r, data: data }; },
                                 function () { return { r: r, data: null }; });
          }
          return { r: r, data: null };
        })
        .then(function (answer) {
          var r = answer.r, data = answer.data;
          saving = false;
          if (data && typeof data.revision === "number") revision = data.revision;
          if (r.ok) {
            retryDelay = 2000;
            if (dirty) { send(); return; }
            store(storeKey, null);
            showDraftStatus("saved");
          } else if (r.status === 412 && data && typeof data.revision === "number" && data.revision !== sent) {
            if (retry && !dirty && document.visibilityState === "hidden") {
              /* A retry in the background (this tab is not in view, nothing changed here since) found that
                 another save came first: the participant went on elsewhere, so this tab shows their newer draft. */
              spans = fitting(fromServer(data.highlights));
              dirty = false;
              render();
              store(storeKey, null);
              showDraftStatus("saved");
            } else {
              /* Another save came first (another tab, or this page before a reload): the highlights in view
                 here are the newest the participant made, so they go on top of it. */
              dirty = true;
              send();
            }
          } else if (r.status === 404 || r.status === 409 || r.status === 410) {
            closeDraft();
          } else if (r.status === 400) {  /* cannot happen from this page: the next change sends them again */
            showDraftStatus(null);
          } else {
            retryLater();  /* 5xx, 403 (a session that changed): try again */
          }
        })
        .catch(function () { saving = false; retryLater(); });
    }

    function persist() {
      if (!draftUrl || closed || answering) return;
      dirty = true;
      store(storeKey, JSON.stringify({ spans: spans, unsaved: true }));
      showDraftStatus("saving");
      send();
    }

    /* Back in this tab (another tab may have highlighted meanwhile): the server's draft, unless this tab has
       changes of its own on the way. */
    function refresh() {
      if (!ctx.isConnected) {
        document.removeEventListener("visibilitychange", onVisible);
        window.removeEventListener("focus", refresh);
        window.removeEventListener("online", sendAgain);
        return;
      }
      if (!draftUrl || closed || answering || saving || dirty) return;
      var url = draftUrl + "?position=" + encodeURIComponent(box.getAttribute("data-position"));
      fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" } })
        .then(function (r) {
          if (r.status === 404 || r.status === 409 || r.status === 410) { closeDraft(); return null; }
          return r.ok ? r.json() : null;
        })
        .then(function (data) {
          if (!data || saving || dirty || closed) return;
          /* A reply overtaken by a save made meanwhile (the revision moved on): older than what is shown. */
          if (typeof data.revision === "number") {
            if (data.revision < revision) return;
            revision = data.revision;
          }
          var fresh = fitting(fromServer(data.highlights));
          if (JSON.stringify(fresh) !== JSON.stringify(spans)) { spans = fresh; render(); }
        })
        .catch(function () { /* offline: keep what is shown */ });
    }

    function onVisible() { if (document.visibilityState === "visible") refresh(); }

    if (draftUrl) {
      document.addEventListener("visibilitychange", onVisible);
      window.addEventListener("focus", refresh);
      window.addEventListener("online", sendAgain);
    }

    function save() {
      render();
      persist();
    }

    /* Add a passage; overlapping or touching highlights merge into one. Returns the highlight it became. */
    function add(start, end) {
      if (answering) return null;  /* the answer is on its way with the highlights it had: nothing changes now */
      var snapped = snapToWords(words, start, end);
      start = snapped.start;
      end = snapped.end;
      while (start < end && /\s/.test(text[start])) start++;
      while (end > start && /\s/.test(text[end - 1])) end--;
      if (end <= start) return null;
      var merged = [];
      spans.forEach(function (s) {
        if (s.end < start || s.start > end) merged.push(s);
        else { start = Math.min(start, s.start); end = Math.max(end, s.end); }
      });
      var added = { start: start, end: end, text: text.slice(start, end) };
      merged.push(added);
      merged.sort(function (a, b) { return a.start - b.start; });
      spans = merged;
      pending = null;
      save();
      say(status, (box.getAttribute("data-text-added") || "") + " " + quote(added.text));
      showPending();
      hideFloat();
      return added;
    }

    function remove(i) {
      if (answering) return null;  /* the answer is on its way with the highlights it had */
      var removed = spans.splice(i, 1)[0];
      save();
      say(status, (box.getAttribute("data-text-removed") || "") + " " + quote(removed.text));
      hideFloat();
      return removed;
    }

    function showPending() {
      if (addButton) addButton.disabled = !pending;
      if (preview) {
        var snapped = pending ? snapToWords(words, pending.start, pending.end) : null;
        var t = snapped ? text.slice(snapped.start, snapped.end).trim() : "";
        preview.textContent = t ? quote(t.length > 80 ? t.slice(0, 77) + "\u2026" : t) : "";
      }
    }

    /* ------------------------------------------------ the floating control (touch) */

    /* "Add highlight" just below the selection (clear of the selection handles), or above it when the screen
       ends first; "Remove highlight" beside a tapped highlight. Always placed inside the visible part of the
       page, below the sticky timer: nobody has to scroll to reach it. */
    var HANDLE_GAP = 30;

    function placeFloat(rects) {
      if (!floatBox || !rects.length) return;
      clearTimeout(floatHide);
      floatBox.hidden = false;
      var base = box.getBoundingClientRect();
      var first = rects[0], last = rects[rects.length - 1];
      var h = floatBox.offsetHeight, w = floatBox.offsetWidth;
      var bar = document.getElementById("timer-bar");
      var ceiling = (bar ? Math.max(0, bar.getBoundingClientRect().bottom) : 0) + 4;
      var floor = window.innerHeight - h - 4;
      var top = last.bottom + HANDLE_GAP;
      if (top > floor) top = first.top - HANDLE_GAP - h;
      top = Math.max(ceiling, Math.min(floor, top));
      var left = Math.max(0, Math.min(base.width - w, last.right - base.left - w / 2));
      floatBox.style.top = (top - base.top) + "px";
      floatBox.style.left = left + "px";
    }

    function hideFloat() {
      clearTimeout(floatHide);
      if (floatBox) floatBox.hidden = true;
      floatTarget = -1;
      floatPressed = false;
    }

    function rectsOf(start, end) {
      var a = pointAt(ctx, start), b = pointAt(ctx, end);
      var r = document.createRange();
      r.setStart(a.node, a.offset);
      r.setEnd(b.node, b.offset);
      return Array.prototype.filter.call(r.getClientRects(), function (x) { return x.width > 0 || x.height > 0; });
    }

    /* A selection made by touch or pen (not the mouse, which adds on release, nor the keyboard, which adds with
       Enter): offer to add it, beside it. */
    function offerAdd() {
      if (!floatBox || pointer === "mouse" || viaKeyboard || !pending) return;
      floatTarget = -1;
      if (floatAdd) floatAdd.hidden = false;
      if (floatRemove) floatRemove.hidden = true;
      var snapped = snapToWords(words, pending.start, pending.end);
      placeFloat(rectsOf(snapped.start, snapped.end));
    }

    function offerRemove(i) {
      if (!floatBox) return;
      floatTarget = i;
      if (floatAdd) floatAdd.hidden = true;
      if (floatRemove) {
        floatRemove.hidden = false;
        floatRemove.setAttribute("aria-label", (box.getAttribute("data-text-remove") || "Remove") + ": " + spans[i].text);
      }
      placeFloat(rectsOf(spans[i].start, spans[i].end));
    }

    if (floatBox) {
      /* Pressing the control may clear the selection before its click arrives: keep it until then. */
      floatBox.addEventListener("pointerdown", function () { floatPressed = true; clearTimeout(floatHide); });
      floatBox.addEventListener("pointercancel", function () { floatPressed = false; });
      floatBox.addEventListener("mousedown", function (ev) { ev.preventDefault(); });
    }
    if (floatAdd) floatAdd.addEventListener("click", function () { addSelection(false); hideFloat(); });
    if (floatRemove) floatRemove.addEventListener("click", function () {
      if (floatTarget >= 0 && floatTarget < spans.length) remove(floatTarget);
      hideFloat();
    });

    /* A visible cursor for keyboard users: the story is not editable, so the browser draws none. */
    function showCaret() {
      var sel = selectionIn(ctx);
      if (document.activeElement !== ctx || !sel) { caretMark.hidden = true; return; }
      var p = pointAt(ctx, sel.focus);
      var r = document.createRange();
      r.setStart(p.node, p.offset);
      r.setEnd(p.node, p.offset);
      var rect = r.getClientRects()[0];
      if (!rect && p.node.nodeType === 3 && p.offset < p.node.nodeValue.length) {
        r.setEnd(p.node, p.offset + 1);
        rect = r.getClientRects()[0];
      }
      if (!rect) { caretMark.hidden = true; return; }
      var base = box.getBoundingClientRect();
      caretMark.style.left = (rect.left - base.left) + "px";
      caretMark.style.top = (rect.top - base.top) + "px";
      caretMark.style.height = (rect.height || 18) + "px";
      caretMark.hidden = false;
    }

    function placeCaret(at) {
      caret = Math.max(0, Math.min(text.length, at));
      var p = pointAt(ctx, caret);
      window.getSelection().collapse(p.node, p.offset);
    }

    function moveCaret(alter, direction, granularity) {
      var sel = window.getSelection();
      var before = selectionIn(ctx);
      if (!before) { placeCaret(caret); before = selectionIn(ctx); }
      if (sel.modify) {
        sel.modify(alter, direction, granularity);
        if (!selectionIn(ctx)) {  /* moved out of the story: stay at its edge */
          var edge = direction === "forward" ? text.length : 0;
          selectRange(ctx, alter === "extend" ? before.anchor : edge, edge);
        }
      } else {
        var next = stepOffset(text, before.focus, direction, granularity);
        selectRange(ctx, alter === "extend" ? before.anchor : next, next);
      }
      var now = selectionIn(ctx);
      if (now) caret = now.focus;
      showCaret();
    }

    /* The selection, else the remembered one (touch), becomes a highlight. */
    function addSelection(fromKeyboard) {
      var sel = selectionIn(ctx);
      var span = sel && sel.end > sel.start ? sel : pending;
      if (!span) { say(status, box.getAttribute("data-text-nothing")); return; }
      var added = add(span.start, span.end);
      if (fromKeyboard) {
        ctx.focus();
        placeCaret(added ? added.end : caret);
        showCaret();
      }
    }

    function removeAtCaret() {
      var at = (selectionIn(ctx) || { focus: caret }).focus;
      var i = spans.findIndex(function (s) { return s.start <= at && at <= s.end; });
      if (i < 0) return;
      var removed = remove(i);
      if (!removed) return;
      ctx.focus();
      placeCaret(removed.start);
      showCaret();
    }

    ctx.addEventListener("pointerdown", function (ev) {
      pointer = ev.pointerType || "mouse";
      pressing = true;
      viaKeyboard = false;
    });
    /* A tap or click on a highlight (no selection made): offer to remove it, beside it. */
    ctx.addEventListener("click", function (ev) {
      var mark = ev.target.closest ? ev.target.closest("mark.clue") : null;
      var sel = window.getSelection();
      if (!mark || (sel && !sel.isCollapsed) || Date.now() - lastAdd < 400) return;
      var i = parseInt(mark.getAttribute("data-index"), 10);
      if (i >= 0 && i < spans.length) offerRemove(i);
    });
    ctx.addEventListener("mouseup", function () {
      pressing = false;
      if (pointer !== "mouse") return;  /* touch and pen: adjust the selection, then tap "Add highlight" beside it */
      var sel = selectionIn(ctx);
      if (!sel || sel.end <= sel.start) return;
      window.getSelection().removeAllRanges();
      add(sel.start, sel.end);
      lastAdd = Date.now();  /* the click that ends this drag is not a click on the new highlight */
    });

    ctx.addEventListener("focus", function () {
      if (pressing) return;  /* a click places the selection itself */
      if (!selectionIn(ctx)) placeCaret(caret);
      showCaret();
    });
    ctx.addEventListener("blur", function () { caretMark.hidden = true; });

    ctx.addEventListener("keydown", function (ev) {
      viaKeyboard = true;
      if (ev.ctrlKey && !ev.shiftKey && (ev.key === "a" || ev.key === "c")) return;  /* select all, copy */
      if (ev.key === "Enter" || ((ev.key === "h" || ev.key === "H") && !ev.ctrlKey && !ev.metaKey && !ev.altKey)) {
        ev.preventDefault();
        addSelection(true);
        return;
      }
      if (ev.key === "Delete" || ev.key === "Backspace") {
        ev.preventDefault();
        removeAtCaret();
        return;
      }
      if (ev.key === "Escape") {
        placeCaret((selectionIn(ctx) || { focus: caret }).focus);
        showCaret();
        return;
      }
      var move = KEYS[ev.key];
      if (!move) return;
      ev.preventDefault();
      var granularity = move[1];
      if (ev.ctrlKey || ev.altKey) granularity = granularity === "character" ? "word" : "paragraph";
      moveCaret(ev.shiftKey ? "extend" : "move", move[0], granularity);
    });

    function onSelectionChange() {
      if (!ctx.isConnected) { document.removeEventListener("selectionchange", onSelectionChange); return; }
      var sel = selectionIn(ctx);
      if (sel && sel.end > sel.start) pending = { start: sel.start, end: sel.end };
      else if (sel) pending = null;  /* a bare cursor in the story; a selection elsewhere keeps the last one */
      if (sel) caret = sel.focus;
      showPending();
      showCaret();
      if (sel && sel.end > sel.start) offerAdd();
      else if (floatBox && !floatBox.hidden && floatTarget < 0 && !floatPressed) {
        clearTimeout(floatHide);
        floatHide = setTimeout(hideFloat, 400);  /* unless the control itself is being pressed */
      }
    }

    /* A press anywhere else puts the floating control away (a press on a highlight may offer it again). */
    function onPressElsewhere(ev) {
      if (!ctx.isConnected) { document.removeEventListener("pointerdown", onPressElsewhere, true); return; }
      if (!floatBox || floatBox.hidden || floatBox.contains(ev.target)) return;
      if (floatTarget >= 0) hideFloat();
    }
    document.addEventListener("pointerdown", onPressElsewhere, true);
    document.addEventListener("selectionchange", onSelectionChange);

    if (addButton) addButton.addEventListener("click", function () { addSelection(false); });

    if (form) {
      form.addEventListener("submit", function () { input.value = JSON.stringify(toServer(spans)); });
      /* The answer carries the highlights: no draft is sent once it is on its way (it would be refused). */
      form.addEventListener("htmx:beforeRequest", function () { answering = true; clearTimeout(retryTimer); });
      form.addEventListener("htmx:afterRequest", function (ev) {
        if (ev.detail.successful) store(storeKey, null);
        else { answering = false; if (dirty) send(); }
      });
    }
    if (local && local.unsaved && draftUrl) { dirty = true; send(); }  /* changes left unsaved before a reload */
    render();
    showPending();
    /* A question shown again (a reload, a resume): a save sent just before the reload may have been stored after
       the server read the draft for this page, its answer clearing this tab's unsaved copy; read it once more. */
    if (box.hasAttribute("data-draft-recheck")) refresh();
  }

  /* ------------------------------------------------------------------ copying the completion code */

  function selectContents(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  /* <button data-copy="ID">: copies the text of #ID (the clipboard API, else the selection and copy); says whether
     it worked, and leaves the code selected when it did not, so that it can be copied by hand. */
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest ? ev.target.closest("[data-copy]") : null;
    if (!button) return;
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) return;
    var status = button.parentNode.querySelector("[data-copy-status]");
    var text = target.textContent.trim();
    function said(ok) {
      if (status) status.textContent = button.getAttribute(ok ? "data-text-copied" : "data-text-failed") || "";
      button.setAttribute("data-copied", ok ? "yes" : "no");
      if (!ok) selectContents(target);
    }
    function byHand() {
      selectContents(target);
      try { return document.execCommand("copy"); } catch (e) { return false; }
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { said(true); }, function () { said(byHand()); });
    } else {
      said(byHand());
    }
  });

  /* ------------------------------------------------------------------ the next question after an answer */

  /* The answer's swap removes the focused Submit button: the focus goes to the new question's heading ("Question
     2 of 15"), which screen readers then read, instead of falling to the page's body. */
  document.addEventListener("htmx:afterSettle", function (ev) {
    var target = ev.detail && ev.detail.elt;
    var heading = document.getElementById("question-heading");
    if (heading && target && (target.id === "question" || target.contains(heading))) heading.focus();
  });

  /* ------------------------------------------------------------------ confirmations */

  /* <form data-confirm="question">: asks before submitting (instead of an inline onsubmit handler). */
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var question = form && form.getAttribute ? form.getAttribute("data-confirm") : null;
    if (question && !window.confirm(question)) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
    }
  }, true);

  function init(root) {
    root = root || document;
    startTimer(root);
    root.querySelectorAll("[data-highlighter]").forEach(initHighlighter);
    if (root.matches && root.matches("[data-highlighter]")) initHighlighter(root);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (ev) { init(ev.detail.elt); });
})();
