// reel report: collapse, expand and filter. Every fact is in the page
// without this script (closed <details> open on a click); it only adds the
// controls. It reads the page and never loads anything.
(function () {
  "use strict";
  var bar = document.getElementById("controls");
  if (!bar) { return; }
  function button(label, open) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.addEventListener("click", function () {
      var all = document.querySelectorAll("main details");
      for (var i = 0; i < all.length; i++) { all[i].open = open; }
    });
    bar.appendChild(b);
  }
  button("Expand all", true);
  button("Collapse all", false);
  if (!document.querySelector("article.turn")) { return; }
  var input = document.createElement("input");
  input.type = "search";
  input.placeholder = "Filter turns by tool name or text";
  input.setAttribute("aria-label", "Filter turns");
  bar.appendChild(input);
  var count = document.createElement("span");
  count.className = "note";
  bar.appendChild(count);
  input.addEventListener("input", function () {
    var q = input.value.toLowerCase();
    var turns = document.querySelectorAll("article.turn");
    var shown = 0;
    for (var i = 0; i < turns.length; i++) {
      var t = turns[i];
      var hit = !q || (t.getAttribute("data-tools") || "").toLowerCase().indexOf(q) >= 0 ||
        t.textContent.toLowerCase().indexOf(q) >= 0;
      t.classList.toggle("hidden", !hit);
      if (hit) { shown++; }
    }
    if (q) {
      var pages = document.querySelectorAll("details.page");
      for (var j = 0; j < pages.length; j++) {
        if (pages[j].querySelector("article.turn:not(.hidden)")) { pages[j].open = true; }
      }
    }
    count.textContent = q ? shown + " of " + turns.length + " turns match" : "";
  });
})();
