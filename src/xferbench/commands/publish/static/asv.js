/* asv's published data as tables, with no library and no request: the data comes from
   asv-data.js (window.XFERBENCH_ASV), which xferbench publish writes from asv's own
   index.json and graphs/, with each series' label, device and combinations without a number
   (and why) from xferbench's metadata. One column per series, one row per parameter
   combination, the value at the newest commit. The chosen benchmark is the URL's #, both
   ways: choosing one sets it, and a link or an edited # opens that benchmark. */
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

  function newest(points) {  /* [[revision, value], ...] -> the newest point with data */
    var best = null;
    (points || []).forEach(function (p) {
      if (p[1] !== null && (best === null || p[0] > best[0])) best = p;
    });
    return best;
  }

  function unmeasured(name) {  /* "combo text" -> {reason: [series labels]} */
    var out = {};
    data.series.forEach(function (s) {
      ((s.outcomes || {})[name] || []).forEach(function (o) {
        var key = o[0].join(", ");
        var why = data.reasons[o[1]];
        out[key] = out[key] || {};
        (out[key][why] = out[key][why] || []).push(s.label);
      });
    });
    return out;
  }

  function show(name) {
    var info = data.benchmarks[name] || { params: [], param_names: [], unit: "unknown" };
    var series = data.series.filter(function (s) { return s.graphs[name]; });
    var combos = info.params && info.params.length ? product(info.params) : [[]];
    var why = unmeasured(name);
    view.textContent = "";
    view.appendChild(text("h2", name));
    view.appendChild(text("p", "unit: " + info.unit + "; parameters: " +
      ((info.param_names || []).join(", ") || "none") + "; " + series.length + " of " +
      data.series.length + " series hold a graph of it"));
    var hidden = [];
    if (series.length) {
      var table = text("table", null, { id: "asv-table" });
      var head = text("tr");
      head.appendChild(text("th", (info.param_names || []).join(", ") || "benchmark"));
      var latest = series.map(function (s) { return newest(s.graphs[name]); });
      series.forEach(function (s, i) {
        var p = latest[i];
        var commit = p ? (data.revision_to_hash[String(p[0])] || "").slice(0, 8) : "";
        var th = text("th", null, { "class": "series", "data-torch": String(s.params.torch || ""),
          "data-machine": String(s.params.machine || "") });
        th.appendChild(text("span", s.label));
        th.appendChild(text("br"));
        th.appendChild(text("small", "device " + s.device + (s.quick ? ", quick run" : "") +
          (commit ? ", commit " + commit : "")));
        head.appendChild(th);
      });
      var thead = text("thead");
      thead.appendChild(head);
      table.appendChild(thead);
      var tbody = text("tbody");
      combos.forEach(function (combo, row) {
        var label = combo.map(literal).join(", ");
        var cells = latest.map(function (p) {
          if (!p) return null;
          var v = Array.isArray(p[1]) ? p[1][row] : (row === 0 ? p[1] : null);
          return v === undefined ? null : v;
        });
        if (cells.every(function (v) { return v === null || !isFinite(v); })) {
          hidden.push(label);
          return;
        }
        var tr = text("tr");
        tr.appendChild(text("td", label || name));
        cells.forEach(function (v) { tr.appendChild(text("td", format(v, info.unit))); });
        tbody.appendChild(tr);
      });
      table.appendChild(tbody);
      var box = text("div", null, { "class": "scroll" });
      box.appendChild(table);
      view.appendChild(box);
    } else {
      hidden = combos.map(function (c) { return c.map(literal).join(", "); });
    }
    if (!hidden.length) return;
    view.appendChild(text("h3", hidden.length + " combination" + (hidden.length > 1 ? "s" : "") +
      " without a number in any series"));
    var byReason = {};
    hidden.forEach(function (label) {
      var reasons = why[label] || { "reason not recorded": [] };
      Object.keys(reasons).forEach(function (r) { (byReason[r] = byReason[r] || []).push(label); });
    });
    var list = text("ul", null, { id: "asv-gaps", "class": "gaps" });
    Object.keys(byReason).sort().forEach(function (reason) {
      var item = text("li");
      var details = text("details");
      details.appendChild(text("summary", reason + " (" + byReason[reason].length + ")"));
      details.appendChild(text("p", byReason[reason].join("; ")));
      item.appendChild(details);
      list.appendChild(item);
    });
    view.appendChild(list);
  }

  var names = Object.keys(data && data.benchmarks || {});
  (data && data.all_benchmarks || []).forEach(function (n) {
    if (names.indexOf(n) < 0) names.push(n);
  });
  names.sort();
  if (!data || !names.length) {
    view.textContent = "asv published no data for these results.";
    return;
  }
  names.forEach(function (name) {
    var measured = data.series.some(function (s) { return s.graphs[name]; });
    select.appendChild(text("option", name + (measured ? "" : " (not measured)"), { value: name }));
  });

  function fromHash() {
    var wanted = decodeURIComponent((location.hash || "").slice(1));
    return names.indexOf(wanted) >= 0 ? wanted : null;
  }

  function open(name, updateHash) {
    select.value = name;
    show(name);
    if (updateHash && fromHash() !== name) {
      history.replaceState(null, "", "#" + encodeURIComponent(name));
    }
  }

  select.addEventListener("change", function () {
    location.hash = encodeURIComponent(select.value);  /* a history entry: back returns */
  });
  window.addEventListener("hashchange", function () {
    var name = fromHash();
    if (name) open(name, false);
  });
  /* without a name in the address, the first benchmark that some series measured */
  var first = names.filter(function (n) {
    return data.series.some(function (s) { return s.graphs[n]; });
  })[0];
  open(fromHash() || first || names[0], true);
}());
