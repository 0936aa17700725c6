/* Countersign: keyboard access to scrolling boxes. No build step, no dependencies.
 *
 * A table, a log or a diff wider (or taller) than its box scrolls inside it; a
 * keyboard user can scroll it only once it can take the focus. This script gives every
 * such box that overflows tabindex="0" (and data-scroll-focus, to tell its own from the
 * page's), and takes it away again when the box no longer overflows: on load, on
 * resize, and when live.js replaces a region of the page.
 */
(function () {
  "use strict";
  var selector = ".table-wrap, pre, .feed, .history-scroll";
  var pending = false;

  function overflows(el) {
    return el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
  }

  function mark() {
    pending = false;
    var els = document.querySelectorAll(selector);
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var own = el.hasAttribute("data-scroll-focus");
      if (overflows(el)) {
        if (!own && !el.hasAttribute("tabindex")) {
          el.setAttribute("tabindex", "0");
          el.setAttribute("data-scroll-focus", "");
        }
      } else if (own) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-scroll-focus");
      }
    }
  }

  function schedule() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(mark);
  }

  mark();
  window.addEventListener("resize", schedule);
  window.addEventListener("load", schedule);
  if ("MutationObserver" in window) {
    new MutationObserver(schedule).observe(document.body, { childList: true, subtree: true });
  }
})();
