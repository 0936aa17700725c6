/* Countersign live updates. No build step, no dependencies.
 *
 * Pages work without this script; it only keeps them current.
 *
 * Protocol
 *   Connects to  ws(s)://<host>/ws?after=<lastEventId>
 *   lastEventId starts at <body data-last-event="N"> and then follows the highest
 *   event id received, so a reconnect (with exponential backoff) resumes exactly
 *   after the last event seen and nothing is missed.
 *   Each message is one JSON object, or an array of them:
 *     event: {"id":N,"type":"task.verified","task_id":12,"goal_id":3,...}
 *     log:   {"type":"log","task_id":12,"chunk":"text"}   (no id; not replayed)
 *
 * Page hooks (data- attributes)
 *   <body data-live-refresh="task:12 goal:3">  space/comma separated; "any" = every event.
 *       When an event concerns the page, the current URL is re-fetched with header
 *       "X-Partial: 1" (debounced) and each [data-live-region] is replaced by the
 *       element with the same data-live-region value (or id, or position) in the
 *       response. Regions containing a focused or edited form control are left alone.
 *   <ul data-live-feed [data-live-feed-max="50"]>  a line per event is prepended.
 *       An element inside it with [data-live-empty] is removed on the first line.
 *   <pre data-live-log="12">  log chunks for task 12 are appended ("" = any task).
 *       The element stays scrolled to the bottom if it was there.
 *   [data-live-status]  shows "live" / "reconnecting"; set as data-state too.
 *   [data-queue-count]  the nav's "Waiting on you" count: after an event about a task,
 *       goal, inbox item, question or advisory prompt (debounced), GET /queue/count
 *       ({"count":n}) recomputes it for this viewer; hidden when 0.
 */
(function () {
  "use strict";
  if (!("WebSocket" in window) || !document.body) return;

  var body = document.body;
  var lastId = parseInt(body.dataset.lastEvent || "0", 10) || 0;
  var ws = null;
  var backoff = 500;
  var maxBackoff = 15000;
  var retryTimer = null;
  var refreshTimer = null;
  var refreshing = false;
  var refreshAgain = false;

  function setStatus(state, text) {
    var els = document.querySelectorAll("[data-live-status]");
    for (var i = 0; i < els.length; i++) {
      els[i].hidden = false;
      els[i].dataset.state = state;
      els[i].textContent = text;
    }
  }

  function connect() {
    retryTimer = null;
    var proto = location.protocol === "https:" ? "wss:" : "ws:";
    var url = proto + "//" + location.host + "/ws?after=" + encodeURIComponent(String(lastId));
    try {
      ws = new WebSocket(url);
    } catch (e) {
      schedule();
      return;
    }
    ws.onopen = function () {
      backoff = 500;
      setStatus("live", "Live");
    };
    ws.onmessage = function (m) {
      var data;
      try { data = JSON.parse(m.data); } catch (e) { return; }
      var list = Array.isArray(data) ? data : [data];
      for (var i = 0; i < list.length; i++) {
        if (list[i] && typeof list[i] === "object") handle(list[i]);
      }
    };
    ws.onclose = function () {
      ws = null;
      setStatus("reconnecting", "Reconnecting…");
      schedule();
    };
    ws.onerror = function () {
      // onclose follows and schedules the retry.
    };
  }

  function schedule() {
    if (retryTimer) return;
    var delay = backoff + Math.floor(Math.random() * backoff * 0.3);
    backoff = Math.min(backoff * 2, maxBackoff);
    retryTimer = setTimeout(connect, delay);
  }

  function handle(ev) {
    if (ev.type === "log") {
      appendLog(ev);
      return;
    }
    var id = Number(ev.id);
    if (id && id <= lastId) return; // already seen (replay overlap)
    if (id) {
      lastId = id;
      body.dataset.lastEvent = String(id);
    }
    addFeedLine(ev);
    if (concernsPage(ev)) scheduleRefresh();
    if (/^(task|goal|inbox|question|advisory)\./.test(String(ev.type || ""))) scheduleCount();
  }

  // ---- (d) the queue's count ----
  var countTimer = null;
  function scheduleCount() {
    if (!document.querySelector("[data-queue-count]")) return;
    clearTimeout(countTimer);
    countTimer = setTimeout(refreshCount, 250);
  }

  function refreshCount() {
    fetch("/queue/count", { credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok || r.redirected) throw new Error("count: " + r.status);
        return r.json();
      })
      .then(function (d) {
        var n = Number(d && d.count);
        if (!isFinite(n) || n < 0) return;
        var els = document.querySelectorAll("[data-queue-count]");
        for (var i = 0; i < els.length; i++) {
          els[i].textContent = n > 99 ? "99+" : String(n);
          els[i].setAttribute("aria-label", n === 1 ? "1 item waiting on you" : n + " items waiting on you");
          els[i].hidden = n === 0;
        }
      })
      .catch(function () { /* the count stays; the next event asks again */ });
  }

  // ---- (a) live feed ----
  function stateOf(type) {
    // "task.verified" -> "verified"; used only as a colour hint.
    var s = String(type || "").split(".").pop();
    return /^[a-z_]+$/.test(s) ? s : "unknown";
  }

  function addFeedLine(ev) {
    var feeds = document.querySelectorAll("[data-live-feed]");
    if (!feeds.length) return;
    var when = ev.created_at ? new Date(ev.created_at) : new Date();
    if (isNaN(when.getTime())) when = new Date();
    for (var i = 0; i < feeds.length; i++) {
      var feed = feeds[i];
      var empty = feed.querySelector("[data-live-empty]");
      if (empty) empty.remove();
      var li = document.createElement("li");
      li.className = "is-new state-" + stateOf(ev.type);
      if (ev.id) li.dataset.eventId = String(ev.id);
      // A time like components.Time's; time.js keeps its words and title current.
      var t = document.createElement("time");
      t.dateTime = when.toISOString();
      t.dataset.rel = "ago";
      t.textContent = Math.max(0, Math.floor((Date.now() - when.getTime()) / 1000)) + "s ago";
      var text = document.createElement("span");
      var ty = document.createElement("span");
      ty.className = "feed-type";
      ty.textContent = String(ev.type || "event");
      text.appendChild(ty);
      if (ev.task_id != null) text.appendChild(ref("/tasks/", ev.task_id, "task #"));
      if (ev.goal_id != null) text.appendChild(ref("/goals/", ev.goal_id, "goal #"));
      li.appendChild(t);
      li.appendChild(text);
      feed.insertBefore(li, feed.firstChild);
      var max = parseInt(feed.dataset.liveFeedMax || "50", 10) || 50;
      while (feed.children.length > max) feed.removeChild(feed.lastElementChild);
    }
  }

  function ref(base, id, label) {
    var n = Number(id);
    var a = document.createElement("a");
    a.className = "feed-ref";
    if (isFinite(n) && n > 0) a.href = base + String(n);
    a.textContent = label + String(id);
    return a;
  }

  // ---- (b) partial refresh ----
  function concernsPage(ev) {
    var spec = body.dataset.liveRefresh;
    if (!spec) return false;
    var parts = spec.split(/[\s,]+/);
    for (var i = 0; i < parts.length; i++) {
      var p = parts[i];
      if (!p) continue;
      if (p === "any") return true;
      var kv = p.split(":");
      if (kv.length !== 2) continue;
      if (kv[0] === "task" && ev.task_id != null && String(ev.task_id) === kv[1]) return true;
      if (kv[0] === "goal" && ev.goal_id != null && String(ev.goal_id) === kv[1]) return true;
    }
    return false;
  }

  function scheduleRefresh() {
    if (refreshing) { refreshAgain = true; return; }
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, 150);
  }

  function regionKey(el, i) {
    return el.getAttribute("data-live-region") || (el.id ? "#" + el.id : "@" + i);
  }

  function busy(region) {
    if (region.dataset.liveDirty) return true;
    var a = document.activeElement;
    if (a && region.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) return true;
    return false;
  }

  function refresh() {
    var regions = document.querySelectorAll("[data-live-region]");
    if (!regions.length) return;
    refreshing = true;
    fetch(location.href, { headers: { "X-Partial": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok || r.redirected) throw new Error("refresh: " + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelectorAll("[data-live-region]");
        var byKey = {};
        for (var i = 0; i < fresh.length; i++) byKey[regionKey(fresh[i], i)] = fresh[i];
        var x = window.scrollX, y = window.scrollY;
        var active = document.activeElement;
        var focusKey = active && active !== body ? (active.id ? "#" + active.id : active.getAttribute("data-testid")) : null;
        var cur = document.querySelectorAll("[data-live-region]");
        for (var j = 0; j < cur.length; j++) {
          var src = byKey[regionKey(cur[j], j)];
          if (!src || busy(cur[j])) continue;
          var hadFocus = active && cur[j].contains(active);
          cur[j].innerHTML = src.innerHTML;
          if (hadFocus && focusKey) {
            var again = focusKey.charAt(0) === "#"
              ? document.getElementById(focusKey.slice(1))
              : cur[j].querySelector('[data-testid="' + cssEscape(focusKey) + '"]');
            if (again && again.focus) again.focus({ preventScroll: true });
          }
        }
        window.scrollTo(x, y);
      })
      .catch(function () { /* the page stays as it was; the next event tries again */ })
      .then(function () {
        refreshing = false;
        if (refreshAgain) { refreshAgain = false; scheduleRefresh(); }
      });
  }

  function cssEscape(s) {
    return window.CSS && CSS.escape ? CSS.escape(s) : String(s).replace(/["\\]/g, "\\$&");
  }

  // A region whose form has been edited is not replaced under the user's fingers.
  document.addEventListener("input", function (e) {
    var t = e.target;
    var r = t && t.closest ? t.closest("[data-live-region]") : null;
    if (r) r.dataset.liveDirty = "1";
  });

  // ---- (c) logs ----
  function appendLog(ev) {
    if (typeof ev.chunk !== "string" || !ev.chunk) return;
    var els = document.querySelectorAll("[data-live-log]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var want = el.getAttribute("data-live-log");
      if (want && String(ev.task_id) !== want) continue;
      var atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      var target = el.querySelector("code") || el;
      target.appendChild(document.createTextNode(ev.chunk));
      var maxChars = parseInt(el.dataset.liveLogMax || "200000", 10);
      if (target.textContent.length > maxChars) {
        target.textContent = target.textContent.slice(-maxChars);
      }
      if (atBottom) el.scrollTop = el.scrollHeight;
    }
  }

  // Reconnect promptly when the tab becomes visible or the network returns.
  function nudge() {
    if (!ws && retryTimer) {
      clearTimeout(retryTimer);
      retryTimer = null;
      backoff = 500;
      connect();
    }
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden) nudge(); });
  window.addEventListener("online", nudge);

  connect();
})();
