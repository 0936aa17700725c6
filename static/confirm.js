/* Countersign confirmations. No build step, no dependencies.
 *
 * A submit button (or a form) with data-confirm="<question>" asks the question before
 * its form is submitted; declining cancels the submission, and no other submit
 * handler sees it. It is wired here, in a file the Content-Security-Policy allows,
 * never by inline handlers. Without this script the form submits at once (the
 * service checks every rule either way).
 */
(function () {
  "use strict";
  document.addEventListener("submit", function (e) {
    var form = e.target;
    var btn = e.submitter;
    var q = (btn && btn.getAttribute("data-confirm")) ||
      (form && form.getAttribute && form.getAttribute("data-confirm"));
    if (!q) return;
    if (!window.confirm(q)) {
      e.preventDefault();
      e.stopImmediatePropagation();
    }
  }, true);
})();
