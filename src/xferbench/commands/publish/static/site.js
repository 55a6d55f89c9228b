/* The trend charts to show, per benchmark: one select per parameter (written by xferbench
   publish with the first selection), each chart's parameters in its data-params. Without
   this script every chart shows. And a link to what a closed <details> holds (a row's
   citation, a copy table of an older release) opens it. No library, no request. */
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("form.pick"), function (form) {
    var section = document.getElementById(form.getAttribute("data-for"));
    var figures = section.querySelectorAll("figure.trend");
    var count = form.querySelector(".count");
    var selects = form.querySelectorAll("select");

    function apply() {
      var want = {};
      Array.prototype.forEach.call(selects, function (s) { if (s.value) want[s.name] = s.value; });
      var shown = 0;
      Array.prototype.forEach.call(figures, function (f) {
        var params = JSON.parse(f.getAttribute("data-params"));
        var match = Object.keys(want).every(function (k) { return params[k] === want[k]; });
        f.hidden = !match;
        if (match) shown++;
      });
      count.textContent = shown + " of " + figures.length + " charts";
    }

    form.addEventListener("change", apply);
    apply();
  });

  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.scrollIntoView();
  }

  window.addEventListener("hashchange", reveal);
  reveal();
}());
