// tracebridge operator UI. No inline script anywhere (the CSP forbids it):
// every page loads this file, which wires what the page has.
"use strict";

const tb = (window.tracebridge = {
  csrf: document.querySelector('meta[name="csrf-token"]')?.content || "",
  latencies: [], // ms from an event's time to its arrival here, per commit notice
  rendered: 0,
  mermaidErrors: [],
});

// Live updates: one EventSource per page.
function live(onCommit) {
  const dot = document.getElementById("live");
  const es = new EventSource("/events");
  es.onopen = () => dot && dot.classList.add("on");
  es.onerror = () => dot && dot.classList.remove("on");
  es.addEventListener("commit", (m) => {
    const n = JSON.parse(m.data);
    tb.latencies.push(Date.now() - n.time);
    if (tb.latencies.length > 100000) tb.latencies.splice(0, 50000);
    onCommit(n);
  });
  return es;
}

// Runs page: refetch the table body (same filters) when anything commits,
// at most every 250 ms.
function runsPage() {
  const body = document.getElementById("runs-body");
  let timer = null;
  const refresh = async () => {
    timer = null;
    const r = await fetch("/runs/rows" + location.search, { credentials: "same-origin" });
    if (r.ok) {
      body.innerHTML = await r.text(); // server-rendered, escaped by html/template
      tb.rendered++;
    }
  };
  live((n) => {
    if (n.requestId && !timer) timer = setTimeout(refresh, 250);
  });
  document.querySelectorAll("#runs-filter select").forEach((s) => s.addEventListener("change", () => s.form.submit()));
}

// Diagrams: every <pre class="mermaid-src"> is rendered into the element
// after it. document.body.dataset.mermaid becomes "done" when all are.
async function renderDiagrams() {
  const srcs = document.querySelectorAll("pre.mermaid-src");
  if (!srcs.length) return;
  if (!window.mermaid) {
    document.body.dataset.mermaid = "missing";
    return;
  }
  mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral", sequence: { useMaxWidth: false } });
  let i = 0;
  for (const pre of srcs) {
    const target = pre.nextElementSibling;
    try {
      const { svg } = await mermaid.render("tb-diagram-" + i++, pre.textContent);
      target.innerHTML = svg; // produced by Mermaid with securityLevel strict (DOMPurify)
      target.dataset.rendered = "svg";
      fitDiagram(target);
    } catch (e) {
      target.dataset.rendered = "error";
      target.textContent = "Mermaid could not render this diagram: " + (e && e.message ? e.message : e);
      tb.mermaidErrors.push(String(e && e.message ? e.message : e));
    }
  }
  document.body.dataset.mermaid = tb.mermaidErrors.length ? "error" : "done";
}

// fitDiagram scales a diagram wider than its box down to the box's width,
// so the first screen shows every lane (a gateway run has seven), unless
// its text would shrink below minDiagramScale of its size: then it keeps
// its size and the box scrolls. data-scale says which.
const minDiagramScale = 0.5;
function fitDiagram(box) {
  const svg = box.querySelector("svg");
  if (!svg) return;
  const natural = svg.getBoundingClientRect().width;
  const room = box.clientWidth - 16; // the box's padding
  if (natural <= room || room <= 0) {
    box.dataset.scale = "1";
    return;
  }
  const scale = room / natural;
  if (scale < minDiagramScale) {
    box.dataset.scale = "scroll";
    return;
  }
  const vb = svg.viewBox && svg.viewBox.baseVal;
  if (vb && vb.width) {
    svg.setAttribute("width", String(room));
    svg.setAttribute("height", String(Math.round(vb.height * (room / vb.width))));
  } else {
    svg.style.width = room + "px";
  }
  svg.style.maxWidth = "100%";
  box.dataset.scale = scale.toFixed(2);
}

// render is used by tests and by anyone on the page: Mermaid source in, SVG
// text out (or a thrown error).
tb.render = async (src) => {
  mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
  await mermaid.parse(src);
  const { svg } = await mermaid.render("tb-check-" + Math.random().toString(36).slice(2), src);
  return svg;
};

// Review page: copy the commit message.
function reviewPage() {
  const btn = document.getElementById("copy-commit");
  if (!btn) return;
  btn.addEventListener("click", async () => {
    const text = document.getElementById(btn.dataset.copy).value;
    const status = document.getElementById("copy-status");
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = "copied";
    } catch (e) {
      const ta = document.getElementById(btn.dataset.copy);
      ta.closest("details").open = true;
      ta.select();
      status.textContent = "select-all done: press Ctrl-C";
    }
  });
}

// Workspace page: the line named by the fragment is highlighted and
// scrolled to; a selection inside the code sets the host's focus.
function workspacePage() {
  const code = document.getElementById("code");
  if (!code) return;
  const mark = () => {
    code.querySelectorAll("tr.target").forEach((r) => r.classList.remove("target"));
    const row = location.hash && document.getElementById(location.hash.slice(1));
    if (row) {
      row.classList.add("target");
      row.scrollIntoView({ block: "center" });
    }
  };
  window.addEventListener("hashchange", mark);
  mark();
  const utf8 = new TextEncoder();
  // position turns a DOM point inside the code into a 1-based line and
  // byte column.
  const position = (node, offset) => {
    const el = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    const row = el && el.closest("tr[data-line]");
    const cell = row && row.querySelector("td.src");
    if (!cell) return null;
    let before = "";
    if (cell.contains(node)) {
      const r = document.createRange();
      r.setStart(cell, 0);
      r.setEnd(node, offset);
      before = r.toString();
    }
    return { line: Number(row.dataset.line), col: utf8.encode(before).length + 1 };
  };
  const status = document.getElementById("focus-status");
  const send = async () => {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !code.contains(sel.anchorNode)) return;
    const r = sel.getRangeAt(0);
    const a = position(r.startContainer, r.startOffset);
    const b = position(r.endContainer, r.endOffset);
    if (!a || !b) return;
    const body = { path: code.dataset.path, startLine: a.line, startCol: a.col, endLine: b.line, endCol: b.col };
    const resp = await fetch("/do/focus", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": tb.csrf },
      body: JSON.stringify(body),
    });
    const out = await resp.json().catch(() => ({}));
    status.textContent = resp.ok
      ? `selection sent: ${body.startLine}:${body.startCol}–${body.endLine}:${body.endCol}`
      : "not sent: " + (out.error || resp.status);
    status.dataset.state = resp.ok ? "sent" : "error";
  };
  code.addEventListener("mouseup", () => setTimeout(send, 0));
  code.addEventListener("keyup", (e) => e.shiftKey && send());
}

document.addEventListener("DOMContentLoaded", () => {
  const pageName = document.body.dataset.page;
  if (pageName === "runs" && document.getElementById("runs-body")) runsPage();
  if (pageName === "reviews") reviewPage();
  if (pageName === "workspace") workspacePage();
  renderDiagrams();
});
