/* Countersign times. No build step, no dependencies.
 *
 * Every time on a page is <time datetime="RFC3339" data-rel="ago|waiting"> rendered by
 * the templ component components.Time (or Waiting). The server writes relative words
 * ("12s ago", "waiting 36s") and the moment in UTC as the title; this script, once a
 * second, writes the words again as time passes and puts the moment in the viewer's
 * own time zone, with its date, in the title. Times that arrive later (live.js's feed
 * lines, refreshed regions) are picked up on the next tick.
 *
 * Keep the words in step with relativeText in web/components/time.go.
 */
(function () {
  "use strict";
  var months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  function zoneName() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  function offset(d) {
    var m = -d.getTimezoneOffset();
    var sign = m < 0 ? "-" : "+";
    m = Math.abs(m);
    return "UTC" + sign + pad(Math.floor(m / 60)) + ":" + pad(m % 60);
  }

  // "2026-11-28 17:15:46 (Asia/Tokyo, UTC+09:00)"
  function absolute(d) {
    var z = zoneName();
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) +
      " (" + (z ? z + ", " : "") + offset(d) + ")";
  }

  function span(ms) {
    var s = Math.floor(ms / 1000);
    if (s < 60) return s + "s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + "m";
    var h = Math.floor(m / 60);
    if (h < 24) return h + "h " + (m % 60) + "m";
    return Math.floor(h / 24) + "d " + (h % 24) + "h";
  }

  function ago(ms, d) {
    var future = ms < 0;
    var a = Math.abs(ms);
    var s = Math.floor(a / 1000);
    var words;
    if (s < 60) words = s + "s";
    else if (s < 3600) words = Math.floor(s / 60) + " min";
    else if (s < 86400) words = Math.floor(s / 3600) + " h";
    else if (s < 30 * 86400) words = Math.floor(s / 86400) + " d";
    else return d.getDate() + " " + months[d.getMonth()] + " " + d.getFullYear();
    return future ? "in " + words : words + " ago";
  }

  function tick() {
    var els = document.querySelectorAll("time[data-rel]");
    var now = Date.now();
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      if (el.dataset.local !== "1") {
        el.title = absolute(d);
        el.dataset.local = "1";
      }
      var ms = now - d.getTime();
      var text = el.dataset.rel === "waiting" ? "waiting " + span(Math.max(0, ms)) : ago(ms, d);
      if (el.textContent !== text) el.textContent = text;
    }
  }

  tick();
  setInterval(tick, 1000);
})();
