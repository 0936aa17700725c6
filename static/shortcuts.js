/* Countersign keyboard shortcuts. No build step, no dependencies, no inline script
 * (the Content-Security-Policy forbids it). Pages work without this script.
 *
 *   g i  inbox          g q  what waits on you (/queue)
 *   g t  tasks          g o  goals
 *   /    focus the search box (#nav-search)
 *   j k  next / previous item of the page's list: [data-list-item] elements, else the
 *        rows of the main table, else the inbox cards; the item gets the class
 *        "kbd-selected" and its first link the focus
 *   Enter, o  open the selected item (its first link)
 *   a    the selected item's primary action ([data-primary-action] in it: a link is
 *        followed, a form with a text field gets the focus in that field, a button is
 *        pressed, so a destructive one still asks through confirm.js)
 *   ?    show or hide the list of shortcuts (<dialog id="shortcuts">, in the layout)
 *   Esc  leave a field (the dialog closes itself)
 *
 * Keys typed in a field, or with Ctrl, Alt or Meta, are left alone.
 *
 * It also submits a GET form marked [data-autosubmit] when one of its selects or
 * checkboxes changes (the task and goal filters apply as you choose); such forms
 * keep their submit button, so they work without the script.
 */
(function () {
  "use strict";

  var GO = { i: "/inbox", q: "/queue", t: "/tasks", o: "/goals" };
  var SELECTED = "kbd-selected";
  var pendingG = 0; // time "g" was pressed, 0 when it was not
  var index = -1; // the selected item's position, kept across live refreshes

  function typing(el) {
    if (!el || !el.tagName) return false;
    var tag = el.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || el.isContentEditable;
  }

  function items() {
    var sels = ["main [data-list-item]", "main table.table tbody tr", 'main [data-testid^="inbox-item-"]'];
    for (var i = 0; i < sels.length; i++) {
      var list = document.querySelectorAll(sels[i]);
      if (list.length) return Array.prototype.slice.call(list);
    }
    return [];
  }

  function link(item) {
    return item && item.querySelector("a[href]");
  }

  function select(step) {
    var list = items();
    if (!list.length) return;
    var cur = document.querySelector("." + SELECTED);
    var at = cur ? list.indexOf(cur) : -1;
    if (at < 0 && index >= 0) at = Math.min(index, list.length - 1); // the list was refreshed
    var next = Math.max(0, Math.min(list.length - 1, at + step));
    if (cur) {
      cur.classList.remove(SELECTED);
      cur.removeAttribute("aria-current");
    }
    var item = list[next];
    index = next;
    item.classList.add(SELECTED);
    item.setAttribute("aria-current", "true");
    var a = link(item);
    if (a) a.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  function open() {
    var item = document.querySelector("." + SELECTED);
    var a = link(item);
    if (a) {
      a.click();
      return true;
    }
    return false;
  }

  function primary() {
    var item = document.querySelector("." + SELECTED);
    var box = item && item.querySelector("[data-primary-action]");
    if (!box) return false;
    var field = box.querySelector("textarea, input:not([type=hidden])");
    if (field) {
      field.focus();
      return true;
    }
    var act = box.querySelector("a[href], button");
    if (!act) return false;
    act.click();
    return true;
  }

  function toggleHelp() {
    var d = document.getElementById("shortcuts");
    if (!d || typeof d.showModal !== "function") return;
    if (d.open) d.close();
    else d.showModal();
  }

  function focusSearch() {
    var s = document.getElementById("nav-search");
    if (!s) return false;
    s.focus();
    s.select();
    return true;
  }

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (typing(e.target)) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    var help = document.getElementById("shortcuts");
    if (help && help.open && e.key !== "?") return; // the dialog handles its own keys
    var k = e.key;
    if (pendingG && Date.now() - pendingG < 1500 && GO[k]) {
      pendingG = 0;
      e.preventDefault();
      window.location.assign(GO[k]);
      return;
    }
    pendingG = 0;
    var handled = true;
    if (k === "g") pendingG = Date.now();
    else if (k === "?") toggleHelp();
    else if (k === "/") handled = focusSearch();
    else if (k === "j") select(1);
    else if (k === "k") select(-1);
    else if (k === "o") handled = open();
    else if (k === "a") handled = primary();
    else if (k === "Enter") {
      var a = document.activeElement;
      // A focused link or button answers Enter itself.
      handled = !(a && (a.tagName === "A" || a.tagName === "BUTTON")) && open();
    } else handled = false;
    if (handled) e.preventDefault();
  });

  // Filters that apply as you choose.
  document.addEventListener("change", function (e) {
    var el = e.target;
    if (!el || !el.form || !el.form.hasAttribute("data-autosubmit")) return;
    if (el.tagName === "SELECT" || el.type === "checkbox" || el.type === "radio") {
      if (typeof el.form.requestSubmit === "function") el.form.requestSubmit();
      else el.form.submit();
    }
  });
})();
