// maasflow console: a hash-routed page over the admin API. The admin token
// lives in sessionStorage (this tab only) and travels only in the
// Authorization header, never in a URL.
"use strict";

const API = "/api/v1/admin";
const TOKEN_KEY = "maasflow.adminToken";
const STATUSES = ["pending", "running", "completed", "failed", "manual_intervention", "cancelled"];
// Pages follow the admin API's stream of what they show (server-sent
// events read with fetch, so the token stays in the Authorization header;
// EventSource cannot send it) and re-read the page when it pushes. Where
// the deployment cannot stream (501 streams_unsupported behind API
// Gateway, or an older server) they re-read on this interval instead.
const REFRESH_MS = 2000;
// A failed stream is reopened after this pause.
const RECONNECT_MS = 2000;

let refreshTimer = null;
let generation = 0;
// live is the stream the page follows: { path, ctl, state }.
let live = null;
// noStreams: the server said it cannot stream; poll from now on.
let noStreams = false;
// timeScale is how many times faster than real time the stack's clock runs
// ("" for real time), from the API's X-Maasflow-Time-Scale header.
let timeScale = "";

// clockNote says whose clock the page's times are.
function clockNote() {
  return timeScale ? "Times are the stack's clock, which runs " + timeScale + " times faster than real time (maasflow local --time-scale); durations are in that time." :
    "Times are the stack's clock (real time).";
}

// h builds an element; text children are text nodes, so API data is never
// parsed as HTML.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

class APIError extends Error {
  constructor(status, body) {
    super((body && body.message) || ("HTTP " + status));
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { "Authorization": "Bearer " + token() };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(API + path, init);
  timeScale = resp.headers.get("X-Maasflow-Time-Scale") || "";
  const text = await resp.text();
  const data = text ? JSON.parse(text) : null;
  if (resp.status === 401) {
    signOut("The token was refused; sign in again.");
    throw new APIError(401, data);
  }
  if (!resp.ok) throw new APIError(resp.status, data && data.error ? data.error : data);
  return data;
}

function statusBadge(s) { return h("span", { class: "status " + s }, s.replace("_", " ")); }

function fmtTime(t) { return t ? new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : ""; }

function fmtDur(ms) {
  if (ms < 0) ms = 0;
  const s = Math.round(ms / 1000);
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + (s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

// ---- routing -------------------------------------------------------------

function parseRoute() {
  const raw = location.hash.replace(/^#/, "") || "/overview";
  const [path, query] = raw.split("?");
  return { parts: path.split("/").filter(Boolean), query: new URLSearchParams(query || "") };
}

async function render(focus) {
  clearTimeout(refreshTimer);
  const gen = ++generation;
  if (!token()) { showSignIn(); return; }
  document.getElementById("signin").hidden = true;
  document.getElementById("nav").hidden = false;
  const { parts, query } = parseRoute();
  let page, stream;
  if (parts[0] === "onboardings" && parts[1]) {
    page = () => detailPage(parts[1]);
    stream = "/onboardings/" + encodeURIComponent(parts[1]) + "/stream";
  } else if (parts[0] === "onboardings") {
    page = () => listPage(query.get("status") || "", query.get("site") || "");
    stream = "/onboardings/stream?limit=200";
  } else {
    page = overviewPage;
    // Any change among the newest onboardings can move a count.
    stream = "/onboardings/stream?limit=200";
  }
  for (const a of document.querySelectorAll("#nav a")) {
    a.toggleAttribute("aria-current", false);
    if (a.getAttribute("href") === "#/" + (parts[0] || "overview")) a.setAttribute("aria-current", "page");
  }
  const view = document.getElementById("view");
  try {
    const content = await page();
    // A newer render (the operator moved on) owns the view.
    if (gen !== generation) return;
    const keep = focusKey(document.activeElement);
    view.replaceChildren(content);
    if (keep && !focus) { const el = view.querySelector(keep); if (el) el.focus(); }
  } catch (e) {
    if (gen !== generation || (e instanceof APIError && e.status === 401)) return;
    view.replaceChildren(h("p", { class: "error", role: "alert" }, "Could not load: " + e.message));
  }
  if (focus) document.getElementById("main").focus();
  if (noStreams) {
    showLive("Refreshes every " + REFRESH_MS / 1000 + " s (this deployment does not push).");
    if (!document.getElementById("confirm").open) refreshTimer = setTimeout(() => render(false), REFRESH_MS);
  } else {
    follow(stream);
  }
}

// ---- server push ---------------------------------------------------------

// showLive says on the page how it stays current.
function showLive(text) {
  for (const el of document.querySelectorAll(".live-state")) el.textContent = text;
}

function stopLive() {
  if (live) live.ctl.abort();
  live = null;
}

// follow keeps one stream open for the page: the same path across
// re-renders, a new one when the page changes.
function follow(path) {
  if (live && live.path === path) { showLive(live.state); return; }
  stopLive();
  const l = { path, ctl: new AbortController(), state: "Connecting…" };
  live = l;
  showLive(l.state);
  readStream(l);
}

// readStream reads server-sent events from the stream at l.path until the
// page moves on (abort), reconnecting when the server ends it or it fails.
async function readStream(l) {
  let first = true;
  while (live === l) {
    try {
      const resp = await fetch(API + l.path, { headers: { "Authorization": "Bearer " + token(), "Accept": "text/event-stream" }, signal: l.ctl.signal });
      if (resp.status === 401) { signOut("The token was refused; sign in again."); return; }
      const type = resp.headers.get("Content-Type") || "";
      if (resp.status === 501 || resp.status === 404 || !type.startsWith("text/event-stream")) {
        // No push here: poll instead (the error body says why).
        noStreams = true;
        stopLive();
        render(false);
        return;
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const name = (block.match(/^event: ?(.*)$/m) || [])[1] || "message";
          if (name === "end") continue;
          if (name === "error") throw new Error("the stream ended with an error");
          if (block.split("\n").every(line => line.startsWith(":"))) continue;
          l.state = "Live: the server pushes each change.";
          showLive(l.state);
          // The first event is the state just rendered.
          if (first) { first = false; continue; }
          pushed();
        }
      }
      first = false; // after a reconnect, the first event may be news
    } catch (e) {
      if (l.ctl.signal.aborted || live !== l) return;
      l.state = "Reconnecting to the live stream…";
      showLive(l.state);
      await new Promise(r => setTimeout(r, RECONNECT_MS));
    }
  }
}

// pushed re-reads the page after a push, at most one read at a time and
// never under the open confirmation dialog.
let rendering = false, again = false;
async function pushed() {
  if (document.getElementById("confirm").open) return;
  if (rendering) { again = true; return; }
  rendering = true;
  try { await render(false); } finally { rendering = false; }
  if (again) { again = false; pushed(); }
}

// focusKey is a selector for the focused control inside the view, so a
// refresh does not throw a keyboard user back to the top of the page.
function focusKey(el) {
  if (!el || !document.getElementById("view").contains(el)) return null;
  if (el.id) return "#" + CSS.escape(el.id);
  if (el.dataset.op) return '[data-op="' + CSS.escape(el.dataset.op) + '"]';
  const href = el.getAttribute("href");
  if (href) return 'a[href="' + CSS.escape(href) + '"]';
  return null;
}

// ---- sign in -------------------------------------------------------------

function showSignIn(message) {
  document.getElementById("nav").hidden = true;
  document.getElementById("view").replaceChildren();
  document.getElementById("signin").hidden = false;
  document.getElementById("signin-error").textContent = message || "";
  document.getElementById("token").focus();
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  clearTimeout(refreshTimer);
  stopLive();
  showSignIn(message);
}

async function signIn(ev) {
  ev.preventDefault();
  const input = document.getElementById("token");
  sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = "";
  try {
    await api("GET", "/maas-sites");
  } catch (e) {
    if (!(e instanceof APIError && e.status === 401)) signOut("Sign-in failed: " + e.message);
    return;
  }
  if (!location.hash || location.hash === "#") location.hash = "#/overview";
  render(true);
}

// ---- pages ---------------------------------------------------------------

async function sitesByID() {
  const sites = (await api("GET", "/maas-sites")).items;
  return { sites, names: Object.fromEntries(sites.map(s => [s.id, s.name])) };
}

// countOnboardings counts one site's onboardings in one status, reading at
// most one page: more than a page is shown as "200+".
async function countOnboardings(siteID, status) {
  const page = await api("GET", "/onboardings?limit=200&site_id=" + encodeURIComponent(siteID) + "&status=" + status);
  return page.items.length + (page.next_cursor ? "+" : "");
}

async function overviewPage() {
  const { sites, names } = await sitesByID();
  const counts = await Promise.all(sites.map(s => Promise.all(STATUSES.map(st => countOnboardings(s.id, st)))));
  const stuck = (await api("GET", "/onboardings?limit=200&status=manual_intervention")).items;
  return h("div", {},
    h("h1", {}, "Fleet overview"),
    h("p", { class: "live live-state", role: "status" }, live ? live.state : ""),
    h("h2", { id: "needs-operator" }, "Needs an operator now (" + stuck.length + ")"),
    stuck.length === 0 ? h("p", { class: "muted" }, "No onboarding is waiting for an operator.") :
      h("table", { "aria-labelledby": "needs-operator" },
        h("thead", {}, h("tr", {}, h("th", {}, "Host"), h("th", {}, "Site"), h("th", {}, "Stage"), h("th", {}, "Error"), h("th", {}, "Since"))),
        h("tbody", {}, stuck.map(o => h("tr", {},
          h("td", {}, h("a", { href: "#/onboardings/" + o.id }, o.hostname)),
          h("td", {}, names[o.site_id] || o.site_id),
          h("td", {}, o.stage),
          h("td", {}, o.error ? o.error.code + ": " + o.error.message : ""),
          h("td", {}, fmtTime(o.updated_at)))))),
    h("h2", {}, "Sites"),
    sites.length === 0 ? h("p", { class: "muted" }, "No MAAS site is registered yet.") :
      h("div", { class: "cards" }, sites.map((s, i) => h("section", { class: "card", "aria-label": "Site " + s.name },
        h("h2", {}, s.name, " ", h("span", { class: "muted" }, "(" + s.status + ")")),
        h("table", {},
          h("thead", {}, h("tr", {}, h("th", {}, "Status"), h("th", { class: "num" }, "Onboardings"))),
          h("tbody", {}, STATUSES.map((st, j) => h("tr", {},
            h("td", {}, h("a", { href: listHash(st, s.id) }, st.replace("_", " "))),
            h("td", { class: "num", "data-status": st }, counts[i][j])))))))));
}

function listHash(status, site) {
  const q = new URLSearchParams();
  if (status) q.set("status", status);
  if (site) q.set("site", site);
  const qs = q.toString();
  return "#/onboardings" + (qs ? "?" + qs : "");
}

async function listPage(status, site) {
  const { sites, names } = await sitesByID();
  const q = "/onboardings?limit=200" + (status ? "&status=" + encodeURIComponent(status) : "") +
    (site ? "&site_id=" + encodeURIComponent(site) : "");
  const items = (await api("GET", q)).items;
  const statusSelect = h("select", { id: "status-filter", name: "status",
    onchange: e => { location.hash = listHash(e.target.value, site); } },
  h("option", { value: "" }, "any status"),
  STATUSES.map(st => h("option", { value: st, selected: st === status }, st.replace("_", " "))));
  const siteSelect = h("select", { id: "site-filter", name: "site",
    onchange: e => { location.hash = listHash(status, e.target.value); } },
  h("option", { value: "" }, "any site"),
  sites.map(s => h("option", { value: s.id, selected: s.id === site }, s.name)));
  return h("div", {},
    h("h1", {}, "Onboardings"),
    h("p", { class: "live live-state", role: "status" }, live ? live.state : ""),
    h("div", { class: "filters" },
      h("div", {}, h("label", { for: "status-filter" }, "Status"), statusSelect),
      h("div", {}, h("label", { for: "site-filter" }, "Site"), siteSelect)),
    items.length === 0 ? h("p", { class: "muted" }, "No onboarding matches.") :
      h("table", {},
        h("thead", {}, h("tr", {}, ["Host", "Site", "Status", "Stage", "Attempt", "Updated"].map(c => h("th", {}, c)))),
        h("tbody", {}, items.map(o => h("tr", {},
          h("td", {}, h("a", { href: "#/onboardings/" + o.id }, o.hostname)),
          h("td", {}, names[o.site_id] || o.site_id),
          h("td", {}, statusBadge(o.status)),
          h("td", {}, o.stage),
          h("td", { class: "num" }, o.attempt),
          h("td", {}, fmtTime(o.updated_at)))))));
}

// stageBars turns the timeline's stage_entered/stage_exited rows into one
// bar per stage visit: from entering to leaving, or to now while open.
function stageBars(o) {
  const bars = [];
  const open = {};
  for (const e of o.timeline) {
    if (e.kind === "stage_entered") {
      const bar = { stage: e.stage, start: Date.parse(e.time), end: null, outcome: "" };
      open[e.stage] = bar;
      bars.push(bar);
    } else if (e.kind === "stage_exited" && open[e.stage]) {
      open[e.stage].end = Date.parse(e.time);
      open[e.stage].outcome = e.outcome || "";
      delete open[e.stage];
    }
  }
  const terminal = o.status !== "pending" && o.status !== "running";
  const stop = terminal ? Date.parse(o.completed_at || o.updated_at) : Date.now();
  for (const b of bars) {
    if (b.end !== null) continue;
    b.end = Math.max(b.start, stop);
    b.open = !terminal;
    // A run that ended inside a stage (done, or stopped) never wrote its
    // exit: the run's status says how the stage ended.
    if (terminal) b.outcome = o.status === "completed" ? "ok" : o.status;
  }
  return bars;
}

function gantt(bars) {
  if (bars.length === 0) return h("p", { class: "muted" }, "No stage has started yet.");
  const t0 = Math.min(...bars.map(b => b.start));
  const span = Math.max(1, Math.max(...bars.map(b => b.end)) - t0);
  return h("div", { class: "gantt", role: "list", "aria-label": "Stage timeline" }, bars.map(b => {
    const bar = h("div", { class: "bar " + (b.open ? "open" : b.outcome) });
    bar.style.left = (100 * (b.start - t0) / span) + "%";
    bar.style.width = (100 * (b.end - b.start) / span) + "%";
    const label = b.stage + ": " + fmtDur(b.end - b.start) + (b.open ? " so far, running" : b.outcome ? ", " + b.outcome : "");
    return h("div", { role: "listitem", "aria-label": label, class: "stage-row" },
      h("span", { class: "name" }, b.stage),
      h("div", { class: "track", title: label }, bar),
      h("span", { class: "dur" }, fmtDur(b.end - b.start)));
  }));
}

async function detailPage(id) {
  const [o, { names }] = await Promise.all([api("GET", "/onboardings/" + encodeURIComponent(id)), sitesByID()]);
  const facts = [["Status", statusBadge(o.status)], ["Stage", o.stage], ["Site", names[o.site_id] || o.site_id],
    ["Attempt / run", o.attempt + " / " + (o.run || 1)], ["MAAS system id", o.maas_system_id || "—"],
    ["IPMI", o.ipmi_ip], ["Correlation id", o.correlation_id], ["Created", fmtTime(o.created_at)]];
  const ops = o.allowed_operations || [];
  return h("div", {},
    h("p", {}, h("a", { href: "#/onboardings" }, "← Onboardings")),
    h("h1", {}, "Onboarding ", o.hostname),
    h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    o.error ? h("div", { class: "failure", role: "status", id: "failure" },
      h("strong", {}, o.error.code), o.error.stage ? " in " + o.error.stage : "", ": ", o.error.message) : null,
    h("h2", {}, "Recovery operations"),
    ops.length === 0 ? h("p", { class: "muted" }, "None allowed in this state.") :
      h("div", { class: "actions" }, ops.map(op => h("button", { type: "button", "data-op": op,
        onclick: () => askOperation(o, op) }, op.replaceAll("-", " ")))),
    h("h2", {}, "Stage timeline"),
    h("p", { class: "live", id: "clock-note" }, clockNote()),
    h("p", { class: "live live-state", role: "status" }, live ? live.state : ""),
    h("p", { class: "legend muted" }, h("span", { class: "key ok" }), "ok ", h("span", { class: "key failed" }), "failed ",
      h("span", { class: "key manual_intervention" }), "retried or manual intervention ", h("span", { class: "key open" }), "running"),
    gantt(stageBars(o)),
    h("h2", { id: "maas-events" }, "MAAS events (" + o.diagnostics.maas_events.length + ")"),
    o.diagnostics.maas_events.length === 0 ? h("p", { class: "muted" }, "MAAS has logged nothing for this machine yet.") :
      h("table", { "aria-labelledby": "maas-events" },
        h("thead", {}, h("tr", {}, h("th", {}, "Time"), h("th", {}, "Stage"), h("th", {}, "Event"))),
        h("tbody", {}, o.diagnostics.maas_events.map(e => h("tr", {},
          h("td", {}, fmtTime(e.time)), h("td", {}, e.stage || ""), h("td", {}, e.detail || ""))))),
    o.diagnostics.installation_output ? [h("h2", {}, "Installation output"),
      h("pre", { class: "output", tabindex: "0" }, o.diagnostics.installation_output)] : null);
}

// ---- recovery operations -------------------------------------------------

function askOperation(o, op) {
  clearTimeout(refreshTimer);
  const dlg = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = "Run " + op.replaceAll("-", " ") + "?";
  document.getElementById("confirm-text").textContent =
    "This runs " + op + " on the onboarding of " + o.hostname + " (now " + o.status + " at " + o.stage + ").";
  document.getElementById("confirm-reason").value = "";
  document.getElementById("confirm-error").textContent = "";
  dlg.dataset.op = op;
  dlg.dataset.id = o.id;
  dlg.showModal();
  document.getElementById("confirm-reason").focus();
}

async function confirmOperation(ev) {
  ev.preventDefault();
  const dlg = document.getElementById("confirm");
  const reason = document.getElementById("confirm-reason").value.trim();
  if (!reason) { document.getElementById("confirm-error").textContent = "Give a reason."; return; }
  try {
    await api("POST", "/onboardings/" + encodeURIComponent(dlg.dataset.id) + "/" + dlg.dataset.op, { reason });
  } catch (e) {
    document.getElementById("confirm-error").textContent = e.message;
    return;
  }
  dlg.close();
  render(false);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("signin-form").addEventListener("submit", signIn);
  document.getElementById("signout").addEventListener("click", () => signOut(""));
  document.getElementById("confirm-form").addEventListener("submit", confirmOperation);
  document.getElementById("confirm-cancel").addEventListener("click", () => document.getElementById("confirm").close());
  document.getElementById("confirm").addEventListener("close", () => render(false));
  window.addEventListener("hashchange", () => render(true));
  render(true);
});
