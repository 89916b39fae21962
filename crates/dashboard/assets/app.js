// fleetdesk dashboard: keyboard shortcuts for a fast pass through a queue, and confirmation of
// forms marked data-confirm. Every page works without it.
(function () {
  "use strict";
  var cards = function () { return Array.prototype.slice.call(document.querySelectorAll("[data-card]")); };
  var current = -1;
  function select(i) {
    var all = cards();
    if (!all.length) return;
    current = Math.max(0, Math.min(i, all.length - 1));
    all.forEach(function (c, n) { c.classList.toggle("current", n === current); });
    all[current].scrollIntoView({ block: "nearest" });
    all[current].focus({ preventScroll: true });
  }
  function inCurrent(selector) {
    var all = cards();
    if (current < 0 || !all[current]) return null;
    return all[current].querySelector(selector);
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    var el;
    switch (e.key) {
      case "j": select(current + 1); break;
      case "k": select(current - 1); break;
      case "a":
        el = inCurrent("[data-key=approve]");
        if (el) el.click(); else return;
        break;
      case "s":
        el = inCurrent("[data-key=send-back]");
        if (el) el.focus(); else return;
        break;
      case "r":
        el = inCurrent("[data-key=rewrite]");
        if (el) el.focus(); else return;
        break;
      default: return;
    }
    e.preventDefault();
  });
  document.addEventListener("submit", function (e) {
    var f = e.target;
    var ask = f.getAttribute("data-confirm");
    if (ask && !window.confirm(ask)) { e.preventDefault(); return; }
    // A form sent once is not sent again by a second click; its one-time key would replay.
    var b = f.querySelectorAll("button");
    window.setTimeout(function () { b.forEach(function (x) { x.disabled = true; }); }, 0);
  });
  document.querySelectorAll("[data-check-all]").forEach(function (box) {
    box.addEventListener("change", function () {
      var scope = box.closest("form");
      scope.querySelectorAll("input[type=checkbox][name$='[]']").forEach(function (c) { c.checked = box.checked; });
    });
  });
})();
