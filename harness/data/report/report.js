/* wholeloop HTML report: everything runs from this file, nothing is fetched.
 * The first render is the static page; an attempt's detail is decoded (gzip + base64 in a
 * <script> block) only when its cell is opened. Text from transcripts is only ever set through
 * textContent, never parsed as HTML. */
(function () {
  "use strict";
  // Text from a run is shown, never acted on: escape sequences and control characters become
  // visible (ESC as \u241b, CR as \u240d, C1 and bidi controls as <U+XXXX>), the rule of
  // harness/report/format.py `visible`. Applied once to all data, as it is decoded.
  var CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function vis(s) {
    return s.replace(/\r\n/g, "\n").replace(CONTROL, function (c) {
      var n = c.charCodeAt(0);
      if (n < 0x20) return String.fromCharCode(0x2400 + n);
      if (n === 0x7f) return "\u2421";
      return "<U+" + ("000" + n.toString(16).toUpperCase()).slice(-4) + ">";
    });
  }
  function visAll(v) {
    if (typeof v === "string") return vis(v);
    if (Array.isArray(v)) return v.map(visAll);
    if (v && typeof v === "object") { var o = {}; for (var k in v) o[k] = visAll(v[k]); return o; }
    return v;
  }
  var INDEX = visAll(JSON.parse(document.getElementById("wl-index").textContent));
  var cache = {};
  var state = { reps: [], rep: null, attempt: null, tab: "transcript", data: null, cell: null };
  var TAIL = 15;

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (attrs[k] == null || attrs[k] === false) continue;
      if (k === "class") el.className = attrs[k];
      else if (k === "text") el.textContent = attrs[k];
      else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), attrs[k]);
      else el.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(el, x); }); return; }
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  // The rules of harness/report/format.py (usd, seconds), so the page says what the terminal says.
  function usd(v) { return v == null ? "unknown" : (v === 0 ? "$0" : "$" + (Math.abs(v) < 1 ? v.toFixed(4) : v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }))); }
  function secs(v) { return v == null ? "-" : (v < 120 ? v.toFixed(1) + "s" : (v < 7200 ? (v / 60).toFixed(1) + "m" : (v / 3600).toFixed(1) + "h")); }
  function num(v) { return (v || 0).toLocaleString("en-US"); }

  /* ---- decoding one repeat's payload ------------------------------------------------ */
  function load(i) {
    if (cache[i]) return Promise.resolve(cache[i]);
    var el = document.getElementById("a-" + i);
    if (!el) return Promise.reject(new Error("no data for attempt " + i));
    if (typeof DecompressionStream === "undefined")
      return Promise.reject(new Error("this browser cannot decompress the embedded data (DecompressionStream missing); use a current Chromium, Firefox or Safari"));
    var bin = atob(el.textContent.trim());
    var bytes = new Uint8Array(bin.length);
    for (var j = 0; j < bin.length; j++) bytes[j] = bin.charCodeAt(j);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(function (t) { cache[i] = visAll(JSON.parse(t)); return cache[i]; });
  }

  /* ---- the drawer ----------------------------------------------------------------- */
  var drawer = document.getElementById("drawer"), scrim = document.getElementById("scrim");
  function $(id) { return document.getElementById(id); }

  function open(reps, cell) {
    if (state.cell) state.cell.classList.remove("open");
    state.cell = cell || null;
    if (cell) cell.classList.add("open");
    state.reps = reps;
    state.tab = "transcript"; // a cell opens on its transcript; switching repeats keeps the tab
    drawer.hidden = false; scrim.hidden = false;
    var first = INDEX[reps[0]];
    $("dr-task").textContent = first[0];
    $("dr-cfg").textContent = first[1];
    var chips = $("dr-reps"); chips.textContent = "";
    if (reps.length > 1) reps.forEach(function (r) {
      var m = INDEX[r];
      chips.appendChild(h("button", { class: "chip", "data-rep": r, onclick: function () { selectRep(r); } },
        h("i", { class: "sq sq-" + m[3] }), "repeat " + m[2] + (m[4] > 1 ? " · " + m[4] + " attempts" : "") + " · " + m[3]));
    });
    selectRep(reps[0]);
    $("dr-close").focus({ preventScroll: true });
  }
  function close() {
    drawer.hidden = true; scrim.hidden = true;
    if (state.cell) { state.cell.classList.remove("open"); state.cell.focus({ preventScroll: true }); }
    if (location.hash.indexOf("#open=") === 0) history.replaceState(null, "", location.pathname + location.search);
  }
  function selectRep(r) {
    state.rep = r;
    history.replaceState(null, "", "#open=" + r);
    Array.prototype.forEach.call($("dr-reps").children, function (c) { c.classList.toggle("on", +c.getAttribute("data-rep") === r); });
    $("dr-body").textContent = "loading…";
    load(r).then(function (d) {
      if (state.rep !== r) return;
      state.data = d;
      state.attempt = d.attempts.length - 1;
      header(); tabs(); body();
    }).catch(function (e) { $("dr-body").textContent = ""; $("dr-body").appendChild(h("div", { class: "err", text: String(e.message || e) })); });
  }
  function cur() { return state.data.attempts[state.attempt] || {}; }

  function header() {
    var d = state.data, a = cur();
    var pill = $("dr-outcome"); pill.className = "pill o-" + a.outcome; pill.textContent = a.outcome;
    if ((a.grade || {}).tampering) pill.textContent += " · suspected tampering";
    $("dr-cfg").textContent = d.config + " · repeat " + d.repeat + (d.attempts.length > 1 ? " · " + d.attempts.length + " attempts" : "");
    var st = $("dr-stats"); st.textContent = "";
    var u = a.usage || {}, p = a.phases || {};
    var items = [
      ["stopped", a.stop_reason || "-"], ["steps", a.steps], ["tokens", num(u.input_tokens) + " in / " + num(u.output_tokens) + " out"],
      ["cost", usd(a.cost_usd)], ["agent", secs(p.agent_s) + " (model " + secs(p.model_s) + ", tools " + secs(p.tool_s) + ", waiting " + secs(p.retry_wait_s) + ")"],
      ["grading", secs(p.grading_s)], ["total", secs(p.total_s)]
    ];
    items.forEach(function (it) { st.appendChild(h("span", null, it[0] + " ", h("b", { text: String(it[1]) }))); });
    if (d.attempts.length > 1) {
      var box = h("span", null, "attempt ");
      d.attempts.forEach(function (at, i) {
        box.appendChild(h("button", { class: "chip" + (i === state.attempt ? " on" : ""), onclick: function () { state.attempt = i; header(); tabs(); body(); } },
          h("i", { class: "sq sq-" + at.outcome }), String(at.attempt)));
      });
      st.appendChild(box);
    }
  }

  function tabs() {
    var a = cur(), t = $("dr-tabs"); t.textContent = "";
    var nFiles = (a.patch.match(/^diff --git /mg) || []).length;
    var f2p = a.f2p || {}, p2p = a.p2p || {};
    [["transcript", "Transcript", state.data.events.length + " events"], ["diff", "Diff", nFiles + " file" + (nFiles === 1 ? "" : "s")],
     ["tests", "Tests", tally(f2p) === "not run" ? "not run" : "F2P " + tally(f2p) + " · P2P " + tally(p2p)],
     ["details", "Details", ""]].forEach(function (x) {
      t.appendChild(h("button", { class: "tab" + (state.tab === x[0] ? " on" : ""), role: "tab", "data-tab": x[0],
        onclick: function () { state.tab = x[0]; tabs(); body(); } }, x[1], x[2] ? h("span", { class: "n", text: x[2] }) : null));
    });
  }

  function body() {
    var b = $("dr-body"); b.textContent = ""; b.scrollTop = 0;
    var d = state.data, a = cur();
    d.notes.forEach(function (n) { b.appendChild(h("div", { class: "warn", text: "Shortened for this report: " + n + ". The run folder keeps everything." })); });
    if (a.error) b.appendChild(h("div", { class: "err", text: "error: " + a.error }));
    ({ transcript: transcript, diff: diffView, tests: testsView, details: details })[state.tab](b, d, a);
  }

  /* ---- transcript: the same things `wholeloop show` prints ----------------------- */
  function tailBlock(text, cls) {
    var lines = (text || "").replace(/\n$/, "").split("\n");
    var pre = h("pre", { class: cls || "" });
    if (lines.length <= TAIL) { pre.textContent = lines.join("\n"); return pre; }
    pre.textContent = lines.slice(-TAIL).join("\n");
    var wrap = h("div", null);
    var btn = h("button", { class: "more", text: "show all " + lines.length + " lines (" + (lines.length - TAIL) + " earlier)",
      onclick: function () { pre.textContent = lines.join("\n"); btn.remove(); } });
    wrap.appendChild(btn); wrap.appendChild(pre);
    return wrap;
  }
  function editDiff(args) {
    var rows = [];
    String(args.old_str || "").split("\n").forEach(function (l) { rows.push(["del", "-" + l]); });
    String(args.new_str || "").split("\n").forEach(function (l) { rows.push(["add", "+" + l]); });
    var tb = h("tbody");
    rows.forEach(function (r) { tb.appendChild(h("tr", { class: r[0] }, h("td", { text: r[1] }))); });
    return h("div", { class: "diff" }, h("table", null, tb));
  }
  function toolCall(ev) {
    var args = ev.arguments, box = h("div", { class: "call" });
    if (args == null) {
      box.appendChild(h("div", { class: "err", text: ev.name + ": unparseable arguments " + (ev.raw_arguments || "").slice(0, 300) }));
      return box;
    }
    if (ev.name === "bash") {
      box.appendChild(h("pre", { class: "code" }, h("span", { class: "prompt", text: "$ " }), String(args.command || "")));
    } else if (ev.name === "edit") {
      box.appendChild(h("div", { class: "nm", text: "edit " + (args.command || "?") + " " + (args.path || "") }));
      if (args.command === "str_replace") box.appendChild(editDiff(args));
      else if (args.command === "create" || args.command === "insert") box.appendChild(tailBlock(String(args.file_text || args.new_str || ""), "code"));
    } else {
      var s = JSON.stringify(args);
      box.appendChild(h("div", { class: "nm", text: ev.name + (s && s !== "{}" ? " " + s.slice(0, 600) : "") }));
    }
    return box;
  }
  function transcript(b, d) {
    if (!d.events.length) { b.appendChild(h("p", { class: "muted", text: "No transcript in the run folder for this attempt" + (d.transcript_path ? " (expected at " + d.transcript_path + ")." : ".") })); return; }
    d.events.forEach(function (ev) {
      switch (ev.type) {
        case "attempt_start": b.appendChild(h("div", { class: "ev-dim", text: "attempt " + ev.attempt + " started" + (ev.image ? " · image " + ev.image : "") })); break;
        case "phase": b.appendChild(h("div", { class: "ev-dim", text: ev.name + " " + ev.seconds.toFixed(2) + "s" + (ev.detail ? " (" + ev.detail + ")" : "") })); break;
        case "model_request":
          ev.prompts.forEach(function (m) {
            if (m.role === "system" || ev.step === 1) b.appendChild(h("details", { class: "prompt" }, h("summary", { text: m.role + " prompt" }), h("pre", { text: m.content })));
            else b.appendChild(h("div", { class: "panel fb" }, h("div", { class: "ttl", text: m.role + " message" }), h("pre", { text: m.content })));
          });
          break;
        case "model_response":
          var u = ev.usage || {};
          b.appendChild(h("div", { class: "ev-step" }, "step " + ev.step, h("span", { class: "meta", text: secs(ev.latency_s || 0) + " · " + num(u.input_tokens) + " in / " + num(u.output_tokens) + " out" + (ev.cost_usd != null ? " · " + usd(ev.cost_usd) : "") + (ev.retry_wait_s ? " · waited " + secs(ev.retry_wait_s) : "") })));
          if ((ev.text || "").trim()) b.appendChild(h("div", { class: "say" }, h("span", { class: "who", text: "agent" }), ev.text));
          break;
        case "tool_call": b.appendChild(toolCall(ev)); break;
        case "tool_result":
          var bad = ev.is_error || (ev.exit_code != null && ev.exit_code !== 0);
          var label = ev.is_error ? "error" : (ev.exit_code != null ? "exit " + ev.exit_code : "ok");
          b.appendChild(h("div", { class: "out" + (bad ? " bad" : "") },
            h("div", { class: "hd" }, h("span", { text: label + (ev.timed_out ? " · timed out" : "") + (ev.truncated ? " · truncated" : "") }), h("span", { text: ev.duration_s.toFixed(2) + "s" })),
            tailBlock(ev.output)));
          break;
        case "test_run":
          b.appendChild(h("div", { class: "testrun" }, h("span", { class: "pill " + (ev.green ? "green" : "red"), text: ev.green ? "GREEN" : "RED" }),
            ev.passed + " passed, " + ev.failed + " failed, " + ev.errors + " errors" + (ev.failing.length ? " · failing: " + ev.failing.slice(0, 8).join(", ") : "")));
          break;
        case "retry": b.appendChild(h("div", { class: "warn", text: "retry " + ev.attempt + " after " + ev.error_type + (ev.status_code ? " (" + ev.status_code + ")" : "") + ": waited " + secs(ev.wait_s) + (ev.message ? " — " + ev.message : "") })); break;
        case "limit": b.appendChild(h("div", { class: "warn", text: "limit reached: " + ev.limit + " (" + (ev.limit === "disk_limit"
            ? (ev.value / 1048576).toFixed(1) + " MB of " + (ev.maximum / 1048576).toFixed(0) + " MB" : ev.value + " of " + ev.maximum) + ")" })); break;
        case "error": b.appendChild(h("div", { class: "err", text: "error in " + ev.where + ": " + ev.error_type + "\n" + ev.message })); break;
        case "stop": b.appendChild(h("div", { class: "stop" }, "stopped: " + ev.reason, ev.detail ? h("span", { class: "d", text: ev.detail }) : null)); break;
        case "feedback":
          b.appendChild(h("div", { class: "attempt-div", text: "attempt " + ev.attempt }));
          b.appendChild(h("div", { class: "panel fb" }, h("div", { class: "ttl", text: "feedback before attempt " + ev.attempt + " (" + ev.mode + ")" }), h("pre", { text: ev.text }))); break;
        case "patch":
          b.appendChild(h("div", { class: "ev-dim" }, ev.bytes ? "patch of attempt " + ev.attempt + ": " + num(ev.bytes) + " bytes, " + ev.files.join(", ") + " · " : "empty patch",
            ev.bytes ? h("a", { href: "#", text: "see the diff", onclick: function (e) { e.preventDefault(); state.tab = "diff"; tabs(); body(); } }) : null));
          break;
        case "grade":
          b.appendChild(h("div", { class: "panel" }, h("div", { class: "ttl" }, "hidden tests: ", h("span", { class: "pill o-" + ev.outcome, text: ev.outcome }), ev.detail ? " " + ev.detail : ""),
            ev.failing.length ? h("pre", { class: "st-FAILED", text: ev.failing.slice(0, 20).map(function (t) { return "✗ " + t; }).join("\n") }) : null));
          break;
        case "gap": b.appendChild(h("div", { class: "warn", text: "[" + ev.count + " events left out of this report; the transcript file has them]" })); break;
        default: b.appendChild(h("div", { class: "ev-dim", text: ev.type }));
      }
    });
  }

  /* ---- diff ------------------------------------------------------------------------ */
  function diffView(b, d, a) {
    if (!a.patch.trim()) { b.appendChild(h("p", { class: "muted", text: "The agent's patch is empty." })); return; }
    var files = [], f = null;
    a.patch.replace(/\n$/, "").split("\n").forEach(function (line) {
      if (line.indexOf("diff --git ") === 0) { f = { name: line.replace(/^diff --git a\/(.*?) b\/.*$/, "$1"), lines: [], add: 0, del: 0 }; files.push(f); return; }
      if (!f) { f = { name: "(patch)", lines: [], add: 0, del: 0 }; files.push(f); }
      f.lines.push(line);
    });
    b.appendChild(h("div", { class: "muted", style: "margin-bottom:8px", text: num(a.patch_bytes) + " bytes · " + files.length + " file" + (files.length === 1 ? "" : "s") + " · " + d.attempts[state.attempt].dir + "/patch.diff" }));
    files.forEach(function (file) {
      var tb = h("tbody"), o = 0, n = 0, inHunk = false;
      file.lines.forEach(function (line) {
        var m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
        if (m) { o = +m[1]; n = +m[2]; inHunk = true; tb.appendChild(h("tr", { class: "hunk" }, h("td", { class: "ln" }), h("td", { class: "ln" }), h("td", { text: line }))); return; }
        if (!inHunk) return; // index / --- / +++ lines: the file header says it
        var c = line.charAt(0), cls = "", lo = "", ln = "";
        if (c === "+") { cls = "add"; ln = n++; file.add++; }
        else if (c === "-") { cls = "del"; lo = o++; file.del++; }
        else if (c === "\\") { cls = ""; }
        else { lo = o++; ln = n++; }
        tb.appendChild(h("tr", { class: cls }, h("td", { class: "ln", text: String(lo) }), h("td", { class: "ln", text: String(ln) }), h("td", { text: line })));
      });
      b.appendChild(h("div", { class: "diff" }, h("div", { class: "fhead" }, file.name, h("span", { class: "st" }, h("span", { class: "a", text: "+" + file.add }), " ", h("span", { class: "r", text: "−" + file.del }))), h("table", null, tb)));
    });
  }

  /* ---- tests ----------------------------------------------------------------------- */
  // "3/5" passed of listed, or "not run" when no test ran (an empty patch): never 0/N passed.
  function tally(t) { return t.ran === false ? "not run" : (t.passed || 0) + "/" + (t.total || 0); }
  // statuses that are not a framework's own: an id absent from the results, a test never run
  var LABELS = { missing: "not in the test output", not_run: "not run" };
  /* why the attempt ended as it did, as `wholeloop show` opens: the problem (folded), the outcome,
     each failing hidden test with its failure message; for a resolved attempt the tests it made pass */
  function whyView(d, a) {
    var box = h("div", { class: "why" });
    if (d.problem) {
      var lines = d.problem.replace(/\n+$/, "").split("\n"), FOLD = 8;
      var pre = h("pre", { class: "problem", text: lines.slice(0, FOLD).join("\n") });
      box.appendChild(h("div", { class: "ttl", text: "problem statement" }));
      box.appendChild(pre);
      if (lines.length > FOLD) {
        var more = h("button", { class: "more", text: "show all " + lines.length + " lines",
          onclick: function () { pre.textContent = lines.join("\n"); more.remove(); } });
        box.appendChild(more);
      }
    }
    box.appendChild(h("div", { class: "ttl" }, "outcome ", h("span", { class: "pill o-" + a.outcome, text: a.outcome })));
    var failing = a.failing || [];
    if (failing.length) {
      box.appendChild(h("div", { class: "ttl", text: failing.length + " failing hidden test" + (failing.length === 1 ? "" : "s") }));
      failing.forEach(function (t) {
        box.appendChild(h("div", { class: "failing" }, h("span", { class: "s st-" + t[1], text: "✗ " + (LABELS[t[1]] || t[1]) }), " ",
          h("b", { text: t[0] }), h("span", { class: "muted", text: " · " + t[2] })));
        if (t[3]) box.appendChild(h("pre", { class: "msg", text: t[3] }));
      });
    }
    if (a.f2p_passing && a.f2p_passing.length) {
      box.appendChild(h("div", { class: "ttl", text: "FAIL_TO_PASS now passing (" + a.f2p_passing.length + ")" }));
      box.appendChild(h("pre", { class: "st-PASSED", text: a.f2p_passing.map(function (t) { return "✓ " + t; }).join("\n") }));
    }
    return box;
  }

  function testsView(b, d, a) {
    b.appendChild(whyView(d, a));
    var f2p = a.f2p || {}, p2p = a.p2p || {};
    b.appendChild(h("div", { class: "tally" },
      h("div", { class: "box" }, h("div", { class: "muted", text: "FAIL_TO_PASS (the fix)" }), h("b", { text: tally(f2p) }), f2p.ran === false ? "" : " pass"),
      h("div", { class: "box" }, h("div", { class: "muted", text: "PASS_TO_PASS (no regression)" }), h("b", { text: tally(p2p) }), p2p.ran === false ? "" : " pass"),
      h("div", { class: "box" }, h("div", { class: "muted", text: "outcome" }), h("span", { class: "pill o-" + a.outcome, text: a.outcome }))));
    var failing = a.tests.filter(function (t) { return t[1] !== "PASSED" && t[1] !== "XFAIL"; });
    var showAll = failing.length === 0;
    var wrap = h("div");
    function draw() {
      wrap.textContent = "";
      var list = showAll ? a.tests : failing;
      wrap.appendChild(h("div", { style: "margin:4px 0 6px;font-size:12.5px" }, (showAll ? "all " + a.tests.length : failing.length + " failing") + " of " + a.n_tests + " hidden tests · ",
        h("a", { href: "#", text: showAll ? "show failing only" : "show all", onclick: function (e) { e.preventDefault(); showAll = !showAll; draw(); } })));
      var tb = h("tbody");
      list.forEach(function (t) { tb.appendChild(h("tr", null, h("td", { class: "s st-" + t[1], text: LABELS[t[1]] || t[1] }), h("td", { class: "s muted", text: t[2] }), h("td", { text: t[0] }))); });
      wrap.appendChild(h("table", { class: "tests" }, tb));
      if (a.tests.length < a.n_tests) wrap.appendChild(h("div", { class: "muted", text: (a.n_tests - a.tests.length) + " more passing tests not listed" }));
    }
    draw(); b.appendChild(wrap);
    if (a.test_output) b.appendChild(h("div", { class: "panel" }, h("div", { class: "ttl", text: "end of the hidden test output (test_output.txt)" }), tailBlock(a.test_output)));
  }

  /* ---- details ----------------------------------------------------------------------- */
  function details(b, d, a) {
    var p = a.phases || {}, u = a.usage || {}, g = a.grade || {};
    function kv(title, rows) {
      var dl = h("dl", { class: "kv" });
      rows.forEach(function (r) { dl.appendChild(h("dt", { text: r[0] })); dl.appendChild(h("dd", { text: r[1] == null || r[1] === "" ? "-" : String(r[1]) })); });
      b.appendChild(h("h3", { text: title })); b.appendChild(dl);
    }
    kv("Time per phase", [["image", secs(p.image_s) + (p.image_cached ? " (cached)" : " (built)")], ["container start", secs(p.container_start_s)],
      ["agent (wall clock)", secs(p.agent_s)], ["↳ in model calls", secs(p.model_s)], ["↳ in tools", secs(p.tool_s)], ["↳ waiting on retries", secs(p.retry_wait_s)],
      ["patch", secs(p.patch_s)], ["grading", secs(p.grading_s)], ["total", secs(p.total_s)]]);
    kv("Tokens and cost", [["input", num(u.input_tokens)], ["output", num(u.output_tokens)], ["cache read / write", num(u.cache_read_tokens) + " / " + num(u.cache_write_tokens)],
      ["reasoning", num(u.reasoning_tokens)], ["model calls", a.model_calls], ["cost", usd(a.cost_usd)]]);
    var channels = Object.keys(g.channels || {}).map(function (k) { return k + ": " + g.channels[k]; }).join(" · ");
    var stripped = (g.stripped || []).map(function (s) { return s.path + " (" + s.reason + ")"; }).join(", ");
    kv("Grading", [["outcome", a.outcome], ["suspected tampering", g.tampering || "none"], ["patch applied with", g.apply_method],
      ["not applied from the patch", stripped || "none"], ["protected files left at base", (g.reverted || []).join(", ") || "none"],
      ["result channels", channels], ["test exit code", g.exit_code], ["results consistent", g.consistent],
      ["grader version", g.grader_version == null ? "before 2 (not recorded)" : g.grader_version], ["note", g.note || a.note]]);
    var rc = a.recovery;
    if (rc) kv("Recovery inside this attempt", [["visible test runs", rc.test_runs + " (" + rc.red_runs + " red)"],
      ["reached green", rc.reached_green ? "yes, at step " + rc.steps_to_green + " after " + secs(rc.seconds_to_green) : "no"],
      ["red runs before green", rc.red_before_green], ["green after red", rc.green_after_red ? "yes" : "no"],
      ["edits (after a red run)", rc.edits + " (" + rc.edits_after_red + ")"], ["tool errors (recovered)", rc.tool_errors + " (" + rc.tool_errors_recovered + ")"]]);
    kv("Where", [["run", d.run], ["model", d.model], ["agent", d.agent], ["attempt folder", a.dir], ["transcript", d.transcript_path],
      ["started", a.started_at], ["finished", a.finished_at], ["instance id", d.instance_id]]);
  }

  /* ---- the page: cells, links, filters, deep links -------------------------------- */
  document.addEventListener("click", function (e) {
    var t = e.target.closest && e.target.closest("[data-reps]");
    if (!t) return;
    open(t.getAttribute("data-reps").split(",").map(Number), t.classList.contains("cell") ? t : null);
  });
  $("dr-close").addEventListener("click", close);
  scrim.addEventListener("click", close);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape" && !drawer.hidden) close(); });

  var rows = Array.prototype.slice.call(document.querySelectorAll("#mx tbody tr"));
  function filter() {
    var q = $("mx-q").value.trim().toLowerCase(), f = $("mx-f").value, shown = 0;
    rows.forEach(function (r) {
      var ok = (!q || r.getAttribute("data-task").toLowerCase().indexOf(q) >= 0) && (f === "all" || (" " + r.getAttribute("data-kind") + " ").indexOf(" " + f + " ") >= 0);
      r.style.display = ok ? "" : "none"; shown += ok;
    });
    $("mx-count").textContent = shown + " of " + rows.length + " tasks";
  }
  $("mx-q").addEventListener("input", filter);
  $("mx-f").addEventListener("change", filter);
  filter();

  var m = /^#open=(\d+)$/.exec(location.hash);
  if (m && INDEX[+m[1]]) open([+m[1]], null);
  window.__wholeloop = { ready: true, renderedMs: performance.now(), open: open };
})();
