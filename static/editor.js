/* Countersign template editor. No build step, no dependencies.
 *
 * The editor works without this script: every step is a <details> that opens on a
 * click, the arrow buttons move steps and the Preview button re-shows the form with
 * the preview. With it:
 *   - one step is open at a time (opening one closes the others);
 *   - a step is dragged by its summary line to a new place; the inputs of every step
 *     are renumbered (steps[i].…), so the form posts the new order;
 *   - the open step's preview (its contract in plain words and the worker's brief)
 *     is fetched as the step is edited: a POST of the form to its own action with
 *     op=preview:i and the X-Template-Preview header, answered with the card's HTML;
 *   - the summary line follows the step's name, role, verification type and criteria;
 *   - changing a step's completion type shows the inputs of that type and hides (and
 *     disables, so that they are not sent) the others: each input's wrapper lists
 *     the types it applies to in data-types ("infer" for the inferred type). Without
 *     the script, the server shows the inputs of the type as saved, and the
 *     "Show its fields" button (in <noscript>) re-shows the form for a changed type;
 *   - leaving the page with unsaved changes asks first (beforeunload).
 */
(function () {
  "use strict";
  var form = document.querySelector("form[data-template-editor]");
  if (!form) return;
  var list = form.querySelector("[data-steps]");
  if (!list) return;
  var editable = form.dataset.readonly !== "true";
  var card = document.getElementById("template-preview");

  function steps() {
    return Array.prototype.filter.call(list.children, function (el) {
      return el.classList.contains("tpl-step-card");
    });
  }
  function indexOf(section) { return steps().indexOf(section); }
  function details(section) { return section.querySelector("details.tpl-step"); }
  function openStep() { return steps().filter(function (s) { return details(s).open; })[0]; }

  /* ---------- one open step at a time ----------
   * Only a step the user opens closes the others: the steps shown open on load (every
   * step with a field error) fire toggle events too, and must stay open. */
  var userOpened = null;
  list.addEventListener("click", function (e) {
    var summary = e.target.closest && e.target.closest("summary.tpl-step-summary");
    if (summary) userOpened = summary.parentNode;
  }, true);
  list.addEventListener("toggle", function (e) {
    var d = e.target;
    if (!d.classList || !d.classList.contains("tpl-step") || !d.open || d !== userOpened) return;
    userOpened = null;
    steps().forEach(function (s) {
      var other = details(s);
      if (other !== d && other.open) other.open = false;
    });
    if (editable) schedulePreview(indexOf(d.closest(".tpl-step-card")), 0);
  }, true);

  if (!editable) return;

  /* ---------- unsaved changes ---------- */
  var dirty = form.dataset.unsaved === "true";
  var submitting = false;
  form.addEventListener("input", function () { dirty = true; });
  form.addEventListener("change", function () { dirty = true; });
  form.addEventListener("submit", function () { submitting = true; });
  window.addEventListener("beforeunload", function (e) {
    if (!dirty || submitting) return;
    e.preventDefault();
    e.returnValue = "";
  });

  /* ---------- renumbering ---------- */
  var attrs = ["name", "id", "for", "aria-describedby", "data-testid"];
  function renumberValue(v, k) {
    if (/steps\[\d+\]|(^|\s)f-steps-\d+-/.test(v)) {
      return v.replace(/steps\[\d+\]/g, "steps[" + k + "]")
        .replace(/(^|\s)f-steps-\d+-/g, "$1f-steps-" + k + "-");
    }
    return v.replace(/-\d+/, "-" + k); // step-3, criterion-3-0, op-up-3, …
  }
  function renumber() {
    var all = steps();
    all.forEach(function (section, k) {
      if (section.dataset.step !== String(k)) {
        var els = [section].concat(Array.prototype.slice.call(section.querySelectorAll("*")));
        els.forEach(function (el) {
          attrs.forEach(function (a) {
            var v = el.getAttribute(a);
            if (v && /\d/.test(v)) el.setAttribute(a, renumberValue(v, k));
          });
          if (el.tagName === "BUTTON" && el.name === "op") {
            el.value = el.value.replace(/^([a-z-]+):\d+/, "$1:" + k);
          }
        });
        section.dataset.step = String(k);
      }
      var num = section.querySelector("[data-step-num]");
      if (num) num.textContent = "Step " + (k + 1);
      var up = section.querySelector('button[value^="up:"]');
      var down = section.querySelector('button[value^="down:"]');
      if (up) up.disabled = k === 0;
      if (down) down.disabled = k === all.length - 1;
    });
  }

  /* ---------- drag and drop ---------- */
  var dragged = null;
  steps().forEach(function (s) {
    var summary = s.querySelector("summary");
    if (summary) summary.draggable = true;
  });
  list.addEventListener("dragstart", function (e) {
    var section = e.target.closest && e.target.closest(".tpl-step-card");
    if (!section || e.target.tagName !== "SUMMARY") return;
    dragged = section;
    section.classList.add("dragging");
    if (e.dataTransfer) {
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", "step " + (indexOf(section) + 1));
    }
  });
  list.addEventListener("dragover", function (e) {
    if (!dragged) return;
    var target = e.target.closest && e.target.closest(".tpl-step-card");
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = "move";
    if (!target || target === dragged) return;
    var r = target.getBoundingClientRect();
    var before = e.clientY < r.top + r.height / 2;
    list.insertBefore(dragged, before ? target : target.nextSibling);
  });
  list.addEventListener("drop", function (e) {
    if (!dragged) return;
    e.preventDefault();
    finishDrag();
  });
  list.addEventListener("dragend", function () { if (dragged) finishDrag(); });
  function finishDrag() {
    var moved = dragged;
    dragged = null;
    moved.classList.remove("dragging");
    var before = moved.dataset.step;
    renumber();
    if (before !== moved.dataset.step) {
      dirty = true;
      var open = openStep();
      if (open) schedulePreview(indexOf(open), 0);
    }
  }

  /* ---------- summary line ---------- */
  function field(section, suffix) {
    return section.querySelector('[name$="]' + suffix + '"]');
  }
  function refreshSummary(section) {
    var set = function (key, text) {
      var el = section.querySelector('[data-sum="' + key + '"]');
      if (el) el.textContent = text;
    };
    var name = field(section, ".name"), role = field(section, ".role"), vt = field(section, ".verification.type");
    if (name) set("name", name.value.trim() || "(no name)");
    if (role) set("role", role.value.trim() || "no role");
    if (vt) set("verification", vt.value || "auto");
    var n = 0;
    section.querySelectorAll('[data-testid^="criterion-"]').forEach(function (row) {
      var filled = Array.prototype.some.call(row.querySelectorAll("input, select"), function (i) { return i.value.trim() !== ""; });
      if (filled) n++;
    });
    set("criteria", n === 1 ? "1 criterion" : n + " criteria");
  }

  /* ---------- preview ---------- */
  var timer = null, seq = 0;
  function schedulePreview(i, delay) {
    if (!card || i < 0) return;
    clearTimeout(timer);
    timer = setTimeout(function () { preview(i); }, delay);
  }
  function preview(i) {
    var body = new URLSearchParams(new FormData(form));
    body.set("op", "preview:" + i);
    var mine = ++seq;
    card.setAttribute("aria-busy", "true");
    fetch(form.action, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-Template-Preview": "1" }
    }).then(function (r) {
      return r.text().then(function (t) { return { ok: r.ok, status: r.status, text: t }; });
    }).then(function (r) {
      if (mine !== seq) return;
      card.removeAttribute("aria-busy");
      if (r.ok) {
        card.innerHTML = r.text;
      } else {
        card.innerHTML = '<header class="card-header"><h2>Preview</h2></header><div class="card-body small"><p class="field-error" data-testid="preview-failed"></p></div>';
        card.querySelector("p").textContent = "The preview could not be made (HTTP " + r.status + "): press the step's Preview button.";
      }
    }).catch(function () {
      if (mine === seq) card.removeAttribute("aria-busy");
    });
  }
  /* ---------- the inputs of the completion type ---------- */
  function showTypeInputs(section, select) {
    var typ = select.value || "infer";
    section.querySelectorAll("[data-types]").forEach(function (wrap) {
      var applies = wrap.dataset.types.split(" ").indexOf(typ) >= 0;
      wrap.hidden = !applies;
      wrap.querySelectorAll("input, select, textarea").forEach(function (el) { el.disabled = !applies; });
    });
  }
  list.addEventListener("change", function (e) {
    var t = e.target;
    if (!t.name || !/^steps\[\d+\]\.completion\.type$/.test(t.name)) return;
    var section = t.closest(".tpl-step-card");
    if (section) showTypeInputs(section, t);
  });

  list.addEventListener("input", onEdit);
  list.addEventListener("change", onEdit);
  function onEdit(e) {
    var section = e.target.closest && e.target.closest(".tpl-step-card");
    if (!section) return;
    refreshSummary(section);
    if (details(section).open) schedulePreview(indexOf(section), 400);
  }
  // The no-JS Preview button previews in place instead of re-showing the page.
  list.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest('button[name="op"][value^="preview:"]');
    if (!b) return;
    e.preventDefault();
    schedulePreview(indexOf(b.closest(".tpl-step-card")), 0);
  });

  // A step shown open on load (a new template, a moved or previewed step) is
  // previewed at once.
  var first = openStep();
  if (first && card && !card.querySelector('[data-testid="preview-title"]')) schedulePreview(indexOf(first), 0);
})();
