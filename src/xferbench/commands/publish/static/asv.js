/* asv's published data as tables, with no library and no request: the data comes from
   asv-data.js (window.XFERBENCH_ASV), which xferbench publish writes from asv's own
   index.json and graphs/. One column per series (asv's graph parameters, e.g. torch and
   machine), one row per parameter combination, the value at the newest commit. */
(function () {
  "use strict";
  var data = window.XFERBENCH_ASV;
  var select = document.getElementById("benchmark");
  var view = document.getElementById("asv-view");

  function text(tag, content, attrs) {
    var el = document.createElement(tag);
    if (content !== undefined && content !== null) el.textContent = content;
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    return el;
  }

  function literal(repr) {  /* asv stores parameter values as Python reprs: "'h2d'" */
    var m = /^'(.*)'$/.exec(repr);
    return m ? m[1] : repr;
  }

  function product(lists) {
    return lists.reduce(function (acc, values) {
      var out = [];
      acc.forEach(function (prefix) {
        values.forEach(function (v) { out.push(prefix.concat([v])); });
      });
      return out;
    }, [[]]);
  }

  function format(value, unit) {
    if (value === null || value === undefined || !isFinite(value)) return "n/a";
    if (unit === "seconds") {
      var scales = [["s", 1], ["ms", 1e-3], ["us", 1e-6]];
      for (var i = 0; i < scales.length; i++) {
        if (Math.abs(value) >= scales[i][1]) {
          return (value / scales[i][1]).toPrecision(3) + " " + scales[i][0];
        }
      }
      return (value / 1e-9).toPrecision(3) + " ns";
    }
    return Number(value.toPrecision(3)).toString() + " " + unit;
  }

  function varying(series) {  /* the graph parameters that tell the series apart */
    var keys = {};
    series.forEach(function (s) { Object.keys(s.params).forEach(function (k) { keys[k] = 1; }); });
    var names = Object.keys(keys).filter(function (k) {
      var seen = {};
      series.forEach(function (s) { seen[String(s.params[k])] = 1; });
      return Object.keys(seen).length > 1;
    });
    ["torch", "machine"].forEach(function (k) {
      if (names.indexOf(k) < 0 && keys[k]) names.unshift(k);
    });
    return names;
  }

  function newest(points) {  /* [[revision, value], ...] -> the newest point with data */
    var best = null;
    (points || []).forEach(function (p) {
      if (p[1] !== null && (best === null || p[0] > best[0])) best = p;
    });
    return best;
  }

  function show(name) {
    var info = data.benchmarks[name];
    var series = data.series.filter(function (s) { return s.graphs[name]; });
    var names = varying(series);
    var combos = info.params && info.params.length ? product(info.params) : [[]];
    view.textContent = "";
    view.appendChild(text("h2", name));
    view.appendChild(text("p", "unit: " + info.unit + "; parameters: " +
      ((info.param_names || []).join(", ") || "none") + "; " + series.length + " series"));
    var table = text("table", null, { id: "asv-table" });
    var head = text("tr");
    head.appendChild(text("th", (info.param_names || []).join(", ") || "benchmark"));
    var latest = series.map(function (s) { return newest(s.graphs[name]); });
    series.forEach(function (s, i) {
      var label = names.map(function (k) { return k + " " + s.params[k]; }).join(", ");
      var p = latest[i];
      var commit = p ? (data.revision_to_hash[String(p[0])] || "").slice(0, 8) : "";
      var th = text("th", label + (commit ? " (commit " + commit + ")" : ""),
        { "class": "series", "data-torch": String(s.params.torch || ""),
          "data-machine": String(s.params.machine || "") });
      head.appendChild(th);
    });
    var thead = text("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var tbody = text("tbody");
    var hidden = 0;
    combos.forEach(function (combo, row) {
      var cells = latest.map(function (p) {
        if (!p) return null;
        var v = Array.isArray(p[1]) ? p[1][row] : (row === 0 ? p[1] : null);
        return v === undefined ? null : v;
      });
      if (cells.every(function (v) { return v === null || !isFinite(v); })) { hidden++; return; }
      var tr = text("tr");
      tr.appendChild(text("td", combo.map(literal).join(", ") || name));
      cells.forEach(function (v) { tr.appendChild(text("td", format(v, info.unit))); });
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    view.appendChild(table);
    if (hidden) {
      view.appendChild(text("p", hidden + " parameter combinations not measured in any series " +
        "(skipped or failed) are left out.", { "class": "na" }));
    }
  }

  if (!data || !data.series || !data.series.length) {
    view.textContent = "asv published no graphs for these results.";
    return;
  }
  var available = Object.keys(data.benchmarks).filter(function (name) {
    return data.series.some(function (s) { return s.graphs[name]; });
  }).sort();
  available.forEach(function (name) { select.appendChild(text("option", name, { value: name })); });
  select.addEventListener("change", function () { show(select.value); });
  var wanted = decodeURIComponent((location.hash || "").slice(1));
  select.value = available.indexOf(wanted) >= 0 ? wanted : available[0];
  show(select.value);
}());
