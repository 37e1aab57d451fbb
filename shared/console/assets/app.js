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
  } else if (parts[0] === "decommissions" && parts[1]) {
    page = () => decommissionPage(parts[1]);
    stream = "/decommissions/" + encodeURIComponent(parts[1]) + "/stream";
  } else if (parts[0] === "decommissions") {
    page = () => decommissionsPage(query.get("status") || "");
    stream = "/decommissions/stream?limit=200" + (query.get("status") ? "&status=" + encodeURIComponent(query.get("status")) : "");
  } else if (parts[0] === "batches" && parts[1]) {
    page = () => batchPage(parts[1]);
    stream = "/onboarding-batches/" + encodeURIComponent(parts[1]) + "/stream";
  } else if (parts[0] === "batches") {
    page = batchesPage;
    stream = "/onboarding-batches/stream?limit=100";
  } else if (parts[0] === "nodes" && parts[1]) {
    page = () => nodePage(parts[1]);
    stream = "/nodes/" + encodeURIComponent(parts[1]) + "/stream";
  } else if (parts[0] === "nodes") {
    page = () => nodesPage(query.get("status") || "");
    stream = "/nodes/stream?limit=200" + (query.get("status") ? "&status=" + encodeURIComponent(query.get("status")) : "");
  } else if (parts[0] === "drift") {
    page = () => driftPage(query.get("state") || "open");
    stream = "/reconciliation/drift/stream?limit=200&state=" + encodeURIComponent(query.get("state") || "open");
  } else if (parts[0] === "sites") {
    page = sitesPage;
    stream = "/maas-sites/stream";
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
    stopLive();
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

// streamBase is where the streams are served: the API's own origin, or
// the one config.json names (on AWS the stream function's URL, as API
// Gateway cannot stream).
function streamBase() {
  return (signInConfig.stream_url || "").replace(/\/+$/, "");
}

// readStream reads server-sent events from the stream at l.path until the
// page moves on (abort), reconnecting when the server ends it or it fails.
async function readStream(l) {
  let first = true;
  while (live === l) {
    try {
      const resp = await fetch(streamBase() + API + l.path, { headers: { "Authorization": "Bearer " + token(), "Accept": "text/event-stream" }, signal: l.ctl.signal });
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
          // A retry hint or a comment: nothing to show.
          if (!/^data:/m.test(block)) continue;
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

// ---- sign in with the identity provider (PKCE) ---------------------------

// signInConfig is the server's config.json: {sign_in: "token"} (paste the
// admin token) or {sign_in: "oidc", authorize_url, token_url, client_id,
// scopes}: the authorization code grant with PKCE, the page a public client.
let signInConfig = { sign_in: "token" };
// signInError is why the last sign-in failed, until the sign-in shows it.
let signInError = "";
const PKCE_KEY = "maasflow.pkce";

async function loadSignInConfig() {
  try {
    const resp = await fetch("config.json", { headers: { "Accept": "application/json" } });
    if (resp.ok) signInConfig = await resp.json();
  } catch (e) {
    // No settings: the token form.
  }
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

// callbackURL is where the provider sends the browser back: this page,
// without query or fragment.
function callbackURL() { return location.origin + location.pathname; }

// startIdPSignIn sends the browser to the provider's authorize endpoint with
// a fresh verifier's S256 challenge and a state; both stay in this tab.
async function startIdPSignIn() {
  const verifier = randomString(), state = randomString();
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, hash: location.hash }));
  const q = new URLSearchParams({
    response_type: "code", client_id: signInConfig.client_id, redirect_uri: callbackURL(),
    scope: (signInConfig.scopes || ["openid"]).join(" "), state, code_challenge: challenge, code_challenge_method: "S256",
  });
  location.assign(signInConfig.authorize_url + "?" + q.toString());
}

// finishIdPSignIn trades the code the provider sent back for tokens, with
// the verifier, and keeps the ID token; the code leaves the address bar at
// once. It answers whether it signed in.
async function finishIdPSignIn() {
  const q = new URLSearchParams(location.search);
  if (!q.has("code") && !q.has("error")) return false;
  const saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) || "null");
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", callbackURL() + ((saved && saved.hash) || ""));
  // Shown by the sign-in the page draws next.
  const fail = msg => { signInError = msg; return false; };
  if (q.has("error")) return fail("The identity provider refused the sign-in: " + (q.get("error_description") || q.get("error")));
  if (!saved || q.get("state") !== saved.state) return fail("The sign-in answer does not belong to this tab; sign in again.");
  let resp;
  try {
    resp = await fetch(signInConfig.token_url, { method: "POST", body: new URLSearchParams({
      grant_type: "authorization_code", client_id: signInConfig.client_id, code: q.get("code"),
      redirect_uri: callbackURL(), code_verifier: saved.verifier,
    }) });
  } catch (e) {
    return fail("The identity provider could not be reached: " + e.message);
  }
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok || !body.id_token) return fail("The identity provider did not issue a token: " + (body.error_description || body.error || "HTTP " + resp.status));
  sessionStorage.setItem(TOKEN_KEY, body.id_token);
  return true;
}

function showSignIn(message) {
  const idp = signInConfig.sign_in === "oidc";
  document.getElementById("signin-idp").hidden = !idp;
  document.getElementById("signin-form").hidden = idp;
  document.getElementById("nav").hidden = true;
  document.getElementById("view").replaceChildren();
  document.getElementById("signin").hidden = false;
  document.getElementById(idp ? "signin-idp-error" : "signin-error").textContent = message || signInError;
  signInError = "";
  document.getElementById(idp ? "signin-idp-go" : "token").focus();
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
      // A run is in one stage at a time: entering one ends any stage
      // whose exit was not recorded (a decommission records entries only).
      for (const [st, b] of Object.entries(open)) {
        b.end = Date.parse(e.time);
        b.outcome = "ok";
        delete open[st];
      }
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
  const graph = o.execution_id ? await executionGraph(o.execution_id) : null;
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
    graph ? [h("h2", { id: "graph-heading" }, "State machine"), graph] : null,
    o.diagnostics.installation_output ? [h("h2", {}, "Installation output"),
      h("pre", { class: "output", tabindex: "0" }, o.diagnostics.installation_output)] : null,
    // What MAAS's failed scripts printed (the end of it), one block per
    // capture: which set, in which stage and attempt.
    (o.diagnostics.script_results || []).length ? [h("h2", { id: "script-output" }, "Script output"),
      o.diagnostics.script_results.map(r => h("section", { class: "script-result", "aria-label": "Script output " + r.name },
        h("h3", {}, r.name.replaceAll("_", " "), " ", h("span", { class: "muted" },
          "(" + [r.stage, "attempt " + r.attempt, fmtTime(r.time)].filter(Boolean).join(", ") + ")")),
        h("pre", { class: "output", tabindex: "0" }, r.output)))] : null);
}

// ---- a local execution's graph ---------------------------------------------

// graphOpen keeps the graph's <details> open across re-renders.
let graphOpen = false;

// executionGraph draws the state machine of a local execution with the
// path it took and each state's time, from the ASL definition and the
// execution's history that `maasflow local` serves (GRAPH_PATH); null where
// the stack has none (on AWS, the Step Functions console draws it).
const GRAPH_PATH = "/_local/executions/graph";
async function executionGraph(arn) {
  let g;
  try {
    const resp = await fetch(GRAPH_PATH + "?execution=" + encodeURIComponent(arn), { headers: { "Authorization": "Bearer " + token() } });
    if (!resp.ok) return null;
    g = await resp.json();
  } catch (e) {
    return null;
  }
  const def = g.definition;
  // Visits per state (a Parallel's or Map's inner ones too): entered →
  // exited (or still open); order is the path through the top level.
  const visits = {}, order = [];
  const open = {};
  for (const ev of g.events) {
    if (!ev.state) continue;
    if (ev.type.endsWith("StateEntered")) {
      open[ev.state] = Date.parse(ev.time);
      if (ev.state in def.States) order.push(ev.state);
      visits[ev.state] = visits[ev.state] || { n: 0, ms: 0, open: false };
      visits[ev.state].n++;
      visits[ev.state].open = true;
    } else if (ev.type.endsWith("StateExited") && open[ev.state] !== undefined) {
      visits[ev.state].ms += Date.parse(ev.time) - open[ev.state];
      visits[ev.state].open = false;
      delete open[ev.state];
    }
  }
  const end = g.stop_date ? Date.parse(g.stop_date) : Date.now();
  for (const [st, t0] of Object.entries(open)) visits[st].ms += end - t0;
  const failedAt = g.status === "FAILED" || g.status === "ABORTED" || g.status === "TIMED_OUT" ? order[order.length - 1] : null;
  const lay = layoutStates(def.States, def.StartAt);
  // Catch edges run down a gutter on the left, one lane per handler, so
  // that the many transitions to the same failure states do not cross the
  // graph; loops arc out on the right.
  const catchTargets = [...new Set(lay.edges.filter(e => e.kind === "catch").map(e => e.to))];
  const LANE = 7, M = 12, GUTTER = catchTargets.length ? 10 + LANE * catchTargets.length : 0;
  const OX = M + GUTTER, OY = M;
  const NS = "http://www.w3.org/2000/svg";
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const width = OX + lay.width + M + 60, height = lay.height + 2 * M;
  // Drawn at its own size; a narrower window scales it down (viewBox).
  const svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: String(width), role: "img", class: "layered",
    "aria-label": "State machine " + g.state_machine + ": " + order.length + " states entered, " + g.status.toLowerCase() });
  svg.append(el("title", {}, "State machine " + g.state_machine + ", path taken: " + order.join(" → ")));
  const defs = el("defs", {});
  for (const [id, cls] of [["arrow", "edge"], ["arrow-catch", "edge catch"], ["arrow-taken", "taken"]]) {
    const m = el("marker", { id: "graph-" + id, viewBox: "0 0 8 8", refX: "8", refY: "4", markerWidth: "8", markerHeight: "8",
      markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
    m.append(el("path", { d: "M 0 0 L 8 4 L 0 8 z", class: "head " + cls }));
    defs.append(m);
  }
  svg.append(defs);
  // edgePath joins two boxes (their x, y relative to ox, oy): down from
  // the bottom of one to the top of the next when the target is lower,
  // else (a loop) out to the right and back.
  const edgePath = (a, b, ox, oy) => {
    if (b.y > a.y) {
      const x1 = ox + a.x + a.w / 2, y1 = oy + a.y + a.h, x2 = ox + b.x + b.w / 2, y2 = oy + b.y, k = Math.min(60, (y2 - y1) / 2);
      return `M ${x1} ${y1} C ${x1} ${y1 + k}, ${x2} ${y2 - k}, ${x2} ${y2}`;
    }
    const x1 = ox + a.x + a.w, y1 = oy + a.y + a.h / 2, x2 = ox + b.x + b.w, y2 = oy + b.y + b.h / 2;
    const xr = Math.max(x1, x2) + 24 + Math.min(36, Math.abs(y1 - y2) / 12);
    return `M ${x1} ${y1} C ${xr} ${y1}, ${xr} ${y2}, ${x2} ${y2}`;
  };
  const catchPath = (a, b) => {
    const lane = M + LANE * catchTargets.indexOf(b.name) + 2;
    const y1 = OY + a.y + a.h / 2 + 5, y2 = OY + b.y + b.h / 2;
    return `M ${OX + a.x} ${y1} H ${lane} V ${y2} H ${OX + b.x}`;
  };
  // The definition's transitions, faint (a Catch dashed); the path
  // taken, bold.
  for (const e of lay.edges) {
    const [a, b] = [lay.box[e.from], lay.box[e.to]];
    if (e.kind === "catch") svg.append(el("path", { d: catchPath(a, b), class: "edge catch", "marker-end": "url(#graph-arrow-catch)" }));
    else svg.append(el("path", { d: edgePath(a, b, OX, OY), class: "edge", "marker-end": "url(#graph-arrow)" }));
  }
  for (let i = 1; i < order.length; i++) {
    const [a, b] = [lay.box[order[i - 1]], lay.box[order[i]]];
    const caught = lay.edges.some(e => e.from === a.name && e.to === b.name && e.kind === "catch") &&
      !lay.edges.some(e => e.from === a.name && e.to === b.name && e.kind !== "catch");
    svg.append(el("path", { d: caught ? catchPath(a, b) : edgePath(a, b, OX, OY), class: "taken", "marker-end": "url(#graph-arrow-taken)" }));
  }
  const drawBoxes = (l, ox, oy) => {
    for (const b of l.boxes) {
      const v = visits[b.name];
      const cls = !v ? "state" : v.open && g.status === "RUNNING" ? "state current" : b.name === failedAt ? "state failed" : "state visited";
      const x = ox + b.x, y = oy + b.y;
      svg.append(el("rect", { x, y, width: b.w, height: b.h, rx: 4, class: cls + (b.inner.length ? " group" : ""), "data-state": b.name }));
      svg.append(el("text", { x: x + 7, y: y + 14, class: "label" }, b.name));
      if (v) svg.append(el("text", { x: x + 7, y: y + 27, class: "time" }, fmtDur(v.ms) + (v.n > 1 ? " ×" + v.n : "")));
      // A Parallel's branches, a Map's iteration: their own layout inside.
      let ix = x + 10;
      for (const inner of b.inner) {
        for (const e of inner.edges) {
          svg.append(el("path", { d: edgePath(inner.box[e.from], inner.box[e.to], ix, y + 22), class: e.kind === "catch" ? "edge catch" : "edge",
            "marker-end": "url(#graph-arrow)" }));
        }
        drawBoxes(inner, ix, y + 22);
        ix += inner.width + 10;
      }
    }
  };
  drawBoxes(lay, OX, OY);
  const det = h("details", { id: "graph", ontoggle: e => { graphOpen = e.target.open; } },
    h("summary", {}, "Graph of the local execution (" + g.state_machine + ", " + g.status.toLowerCase() + "): " + order.length + " states entered"),
    h("p", { class: "legend muted" }, h("span", { class: "key ok" }), "entered and left ", h("span", { class: "key failed" }), "where it failed ",
      h("span", { class: "key open" }), "running now; bold arrows are the path taken, faint ones the other transitions (dashed: a Catch, down the left gutter; " +
      "loops arc out on the right); times are the stack's clock"),
    h("div", { class: "graph" }, svg));
  det.open = graphOpen;
  return det;
}

// layoutStates places the states of one ASL States map in layers, top to
// bottom in the order the machine runs them: each state one layer below
// the furthest state that leads to it (loops back ignored), a Choice's
// branches side by side in the layer below it, a Parallel's branches and a
// Map's iteration as boxes holding their own layout. It answers the boxes
// ({name, x, y, w, h, inner}) and the edges ({from, to, kind, back}) with
// the size of the whole.
function layoutStates(states, startAt) {
  const BOX_W = 176, BOX_H = 34, GAP_X = 22, GAP_Y = 34, PAD = 10, HEAD = 22;
  const names = Object.keys(states);
  const edges = [];
  const out = {}; // name → [edge]
  for (const n of names) {
    const st = states[n];
    const add = (t, kind) => { if (t && t in states && !edges.some(e => e.from === n && e.to === t && e.kind === kind)) edges.push({ from: n, to: t, kind, back: false }); };
    add(st.Next, "next");
    for (const c of st.Choices || []) add(c.Next, "choice");
    add(st.Default, "choice");
    for (const c of st.Catch || []) add(c.Next, "catch");
  }
  for (const e of edges) (out[e.from] = out[e.from] || []).push(e);
  // Depth first from the start, the machine's own transitions before its
  // catches, to find the loops (an edge back to a state on the way).
  const seen = new Set(), onPath = new Set(), order = [];
  const visit = n => {
    seen.add(n); onPath.add(n); order.push(n);
    const es = (out[n] || []).slice().sort((a, b) => (a.kind === "catch") - (b.kind === "catch"));
    for (const e of es) {
      if (onPath.has(e.to)) e.back = true;
      else if (!seen.has(e.to)) visit(e.to);
    }
    onPath.delete(n);
  };
  if (startAt in states) visit(startAt);
  for (const n of names) if (!seen.has(n)) visit(n);
  // Longest path over the forward edges, in topological order.
  const layer = Object.fromEntries(names.map(n => [n, 0]));
  const indeg = Object.fromEntries(names.map(n => [n, 0]));
  for (const e of edges) if (!e.back) indeg[e.to]++;
  const queue = order.filter(n => indeg[n] === 0);
  while (queue.length) {
    const n = queue.shift();
    for (const e of out[n] || []) {
      if (e.back) continue;
      layer[e.to] = Math.max(layer[e.to], layer[n] + 1);
      if (--indeg[e.to] === 0) queue.push(e.to);
    }
  }
  // Boxes: a Parallel's branches and a Map's iteration hold their own
  // layout side by side.
  const box = {};
  for (const n of names) {
    const st = states[n];
    const subs = st.Type === "Parallel" ? (st.Branches || []) : st.Type === "Map" ? [st.ItemProcessor || st.Iterator].filter(Boolean) : [];
    const inner = subs.filter(s => s.States).map(s => layoutStates(s.States, s.StartAt));
    if (inner.length === 0) { box[n] = { name: n, w: BOX_W, h: BOX_H, inner: [] }; continue; }
    const w = Math.max(BOX_W, inner.reduce((a, l) => a + l.width, 0) + PAD * (inner.length + 1));
    const h = HEAD + Math.max(...inner.map(l => l.height)) + PAD;
    box[n] = { name: n, w, h, inner };
  }
  const rows = [];
  for (const n of order) (rows[layer[n]] = rows[layer[n]] || []).push(n);
  // Order each row by where its predecessors sit (barycentres), so that
  // edges run down rather than across; a few sweeps settle it.
  const preds = n => edges.filter(e => e.to === n && !e.back && e.kind !== "catch").map(e => e.from);
  const place = () => {
    const width = Math.max(...rows.map(r => r.reduce((a, n) => a + box[n].w, 0) + GAP_X * (r.length - 1)));
    let y = 0;
    for (const r of rows) {
      let x = (width - (r.reduce((a, n) => a + box[n].w, 0) + GAP_X * (r.length - 1))) / 2;
      const hRow = Math.max(...r.map(n => box[n].h));
      for (const n of r) { box[n].x = x; box[n].y = y; x += box[n].w + GAP_X; }
      y += hRow + GAP_Y;
    }
    return { width, height: y - GAP_Y };
  };
  let size = place();
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let i = 1; i < rows.length; i++) {
      const centre = n => {
        const p = preds(n);
        return p.length ? p.reduce((a, q) => a + box[q].x + box[q].w / 2, 0) / p.length : box[n].x + box[n].w / 2;
      };
      const c = Object.fromEntries(rows[i].map(n => [n, centre(n)]));
      rows[i].sort((a, b) => c[a] - c[b]);
    }
    size = place();
  }
  return { boxes: names.map(n => box[n]), box, edges, width: size.width, height: size.height, rows };
}

// ---- more pages ------------------------------------------------------------

function facts(list) {
  return h("dl", { class: "facts" }, list.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v === undefined || v === null || v === "" ? "—" : v)]));
}

function liveLine() { return h("p", { class: "live live-state", role: "status" }, live ? live.state : ""); }

function table(label, cols, rows, empty) {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h("table", { "aria-label": label },
    h("thead", {}, h("tr", {}, cols.map(c => h("th", {}, c)))),
    h("tbody", {}, rows.map(r => h("tr", {}, r.map(c => h("td", {}, c))))));
}

function timelineTable(rows) {
  return table("Timeline", ["Time", "Kind", "Stage", "Outcome", "Detail"],
    rows.map(e => [fmtTime(e.time), e.kind, e.stage || "", e.outcome || "", e.detail || e.source || ""]), "Nothing on the timeline yet.");
}

function statusFilter(id, value, statuses, onchange) {
  return h("div", {}, h("label", { for: id }, "Status"),
    h("select", { id, name: "status", onchange: e => onchange(e.target.value) },
      h("option", { value: "" }, "any status"),
      statuses.map(st => h("option", { value: st, selected: st === value }, st.replace("_", " ")))));
}

async function decommissionsPage(status) {
  const items = (await api("GET", "/decommissions?limit=200" + (status ? "&status=" + encodeURIComponent(status) : ""))).items;
  return h("div", {},
    h("h1", {}, "Decommissions"), liveLine(),
    h("div", { class: "filters" }, statusFilter("decom-status-filter", status, STATUSES,
      v => { location.hash = "#/decommissions" + (v ? "?status=" + encodeURIComponent(v) : ""); })),
    table("Decommissions", ["Host", "Site", "Mode", "Status", "Stage", "Disks", "Updated"], items.map(d => [
      h("a", { href: "#/decommissions/" + d.id }, d.hostname), d.site_name || d.site_id, d.mode, statusBadge(d.status), d.stage,
      (d.erase && d.erase.outcome) || "", fmtTime(d.updated_at)]), "No decommission matches."));
}

async function decommissionPage(id) {
  const d = await api("GET", "/decommissions/" + encodeURIComponent(id));
  const ops = d.allowed_operations || [];
  return h("div", {},
    h("p", {}, h("a", { href: "#/decommissions" }, "← Decommissions")),
    h("h1", {}, "Decommission ", d.hostname),
    facts([["Status", statusBadge(d.status)], ["Stage", d.stage], ["Mode", d.mode], ["Site", d.site_name || d.site_id],
      ["Node", h("a", { href: "#/nodes/" + d.node_id }, d.node_id)], ["MAAS system id", d.maas_system_id],
      ["Erase", d.erase ? (d.erase.mode || "") + " → " + (d.erase.outcome || "pending") : ""],
      ["Reimage onboarding", d.onboarding_id ? h("a", { href: "#/onboardings/" + d.onboarding_id }, d.onboarding_id) : ""],
      ["Attempt", d.attempt], ["Correlation id", d.correlation_id]]),
    d.error ? h("div", { class: "failure", role: "status", id: "failure" }, h("strong", {}, d.error.code), d.error.stage ? " in " + d.error.stage : "", ": ", d.error.message) : null,
    h("h2", {}, "Recovery operations"),
    ops.length === 0 ? h("p", { class: "muted" }, "None allowed in this state.") :
      h("div", { class: "actions" }, ops.map(op => h("button", { type: "button", "data-op": op, onclick: () => askAction({
        title: "Run " + op.replaceAll("-", " ") + "?",
        text: "This runs " + op + " on the decommission of " + d.hostname + " (now " + d.status + " at " + d.stage + ").",
        path: "/decommissions/" + encodeURIComponent(d.id) + "/" + op }) }, op.replaceAll("-", " ")))),
    h("h2", {}, "Stage timeline"), h("p", { class: "live", id: "clock-note" }, clockNote()), liveLine(),
    gantt(stageBars(d)),
    h("h2", {}, "Timeline"), timelineTable(d.timeline || []));
}

async function batchesPage() {
  const items = (await api("GET", "/onboarding-batches?limit=100")).items;
  return h("div", {},
    h("h1", {}, "Batches"), liveLine(),
    table("Batches", ["Batch", "Site", "Status", "Nodes", "Counts", "Created"], items.map(b => [
      h("a", { href: "#/batches/" + b.id }, b.id), b.site_name || b.site_id, statusBadge(b.status), b.items.length,
      Object.entries(b.counts || {}).map(([k, v]) => k + " " + v).join(", "), fmtTime(b.created_at)]), "No batch yet."));
}

async function batchPage(id) {
  const b = await api("GET", "/onboarding-batches/" + encodeURIComponent(id));
  const total = b.items.length || 1;
  const done = ["completed", "failed", "cancelled", "manual_intervention", "rejected"];
  const ended = b.items.filter(it => done.includes(it.status)).length;
  const progress = h("progress", { id: "batch-progress", max: String(total), value: String(ended), "aria-label": "Nodes ended" });
  return h("div", {},
    h("p", {}, h("a", { href: "#/batches" }, "← Batches")),
    h("h1", {}, "Batch ", b.id), liveLine(),
    facts([["Status", statusBadge(b.status)], ["Site", b.site_name || b.site_id], ["Profile", b.profile_name || b.profile_id], ["SKU", b.sku_id],
      ["Counts", Object.entries(b.counts || {}).map(([k, v]) => k + " " + v).join(", ")], ["Created", fmtTime(b.created_at)]]),
    h("p", {}, progress, " ", ended + " of " + b.items.length + " nodes ended"),
    table("Nodes of the batch", ["Host", "Status", "Stage", "Attempt", "Error"], b.items.map(it => [
      it.onboarding_id ? h("a", { href: "#/onboardings/" + it.onboarding_id }, it.hostname) : it.hostname,
      statusBadge(it.status), it.stage || "", it.attempt || "", it.error ? (it.error.code ? it.error.code + ": " + it.error.message : String(it.error)) : ""]), "No node."));
}

const NODE_STATUSES = ["onboarding", "active", "decommissioning", "retired", "removed", "failed"];

async function nodesPage(status) {
  const items = (await api("GET", "/nodes?limit=200" + (status ? "&status=" + encodeURIComponent(status) : ""))).items;
  return h("div", {},
    h("h1", {}, "Nodes"), liveLine(),
    h("div", { class: "filters" }, statusFilter("node-status-filter", status, NODE_STATUSES,
      v => { location.hash = "#/nodes" + (v ? "?status=" + encodeURIComponent(v) : ""); })),
    table("Nodes", ["Host", "Site", "SKU", "Status", "MAAS system id", "Updated"], items.map(n => [
      h("a", { href: "#/nodes/" + n.id }, n.hostname), n.site_name || n.site_id, n.sku_id, n.status, n.maas_system_id || "", fmtTime(n.updated_at)]),
    "No node matches."));
}

// nodeActions are the lifecycle actions a node's status allows (the API
// refuses the others with a 409 the dialog shows).
function nodeActions(n) {
  const acts = [];
  if (n.status === "active") {
    acts.push({ key: "decommission", label: "decommission", make: () => {
      const sel = h("select", { id: "decom-mode", name: "mode" },
        h("option", { value: "reimage" }, "reimage: erase, then onboard the same node again"),
        h("option", { value: "storage_cleanup" }, "storage cleanup: erase, then retire the node"),
        h("option", { value: "full" }, "full: erase, remove the node (and the MAAS machine when policy says so)"));
      return { title: "Decommission " + n.hostname + "?",
        text: "This drains " + n.hostname + " and releases its MAAS machine " + (n.maas_system_id || "") + " with the erase policy: its disks are erased.",
        // A storage clean-up has its own endpoint; the other modes are a
        // decommission's.
        path: () => "/nodes/" + encodeURIComponent(n.id) +
          (document.getElementById("decom-mode").value === "storage_cleanup" ? "/storage-cleanup" : "/decommission"),
        extra: h("div", {}, h("label", { for: "decom-mode" }, "Mode"), sel),
        body: r => {
          const mode = document.getElementById("decom-mode").value;
          return mode === "storage_cleanup" ? { reason: r } : { mode, reason: r };
        } };
    } });
    acts.push({ key: "retire", label: "retire", make: () => ({ title: "Retire " + n.hostname + "?",
      text: "The node takes no new allocations; refused while an allocation is active.", path: "/nodes/" + encodeURIComponent(n.id) + "/retire",
      body: () => undefined, reasonOptional: true }) });
  }
  if (n.status === "retired") {
    acts.push({ key: "reactivate", label: "reactivate", make: () => ({ title: "Reactivate " + n.hostname + "?",
      text: "The node returns to service.", path: "/nodes/" + encodeURIComponent(n.id) + "/reactivate", body: () => undefined, reasonOptional: true }) });
    acts.push({ key: "remove", label: "remove", make: () => ({ title: "Remove " + n.hostname + " for good?",
      text: "The node's identity ends and every enrollment token is revoked; a returning host is a new node.",
      path: "/nodes/" + encodeURIComponent(n.id) + "/remove", body: () => undefined, reasonOptional: true }) });
  }
  return acts;
}

async function nodePage(id) {
  const n = await api("GET", "/nodes/" + encodeURIComponent(id));
  const acts = nodeActions(n);
  const ref = (r, kind) => r ? [h("a", { href: "#/" + kind + "/" + r.id }, r.id), " ", r.status, " at ", r.stage, r.mode ? " (" + r.mode + ")" : ""] : "";
  return h("div", {},
    h("p", {}, h("a", { href: "#/nodes" }, "← Nodes")),
    h("h1", {}, "Node ", n.hostname), liveLine(),
    facts([["Status", n.status], ["Site", n.site_name || n.site_id], ["SKU", n.sku_id], ["MAAS system id", n.maas_system_id],
      ["Last onboarding", ref(n.last_onboarding, "onboardings")], ["Last decommission", ref(n.last_decommission, "decommissions")],
      ["Updated", fmtTime(n.updated_at)]]),
    h("h2", {}, "Lifecycle actions"),
    acts.length === 0 ? h("p", { class: "muted" }, "None in this state.") :
      h("div", { class: "actions" }, acts.map(a => h("button", { type: "button", "data-action": a.key, id: "node-" + a.key,
        onclick: () => askAction(a.make()) }, a.label))),
    h("h2", {}, "Allocations"),
    table("Allocations", ["Allocation", "State", "Since"], (n.allocations || []).map(a => [a.allocation_id, a.state, fmtTime(a.updated_at || a.created_at)]),
      "No allocation."));
}

async function driftPage(state) {
  const items = (await api("GET", "/reconciliation/drift?limit=200&state=" + encodeURIComponent(state))).items;
  return h("div", {},
    h("h1", {}, "Drift"), liveLine(),
    h("div", { class: "filters" }, h("div", {}, h("label", { for: "drift-state" }, "State"),
      h("select", { id: "drift-state", name: "state", onchange: e => { location.hash = "#/drift?state=" + e.target.value; } },
        ["open", "closed"].map(st => h("option", { value: st, selected: st === state }, st))))),
    table("Drift", ["Host", "Kind", "Expected", "Observed", "Since", "Resolve"], items.map(d => [
      h("a", { href: "#/nodes/" + d.node_id }, d.hostname), d.kind, d.expected, d.observed, fmtTime(d.first_seen),
      d.state !== "open" ? (d.resolution ? d.resolution.action + " by " + (d.closed_by || "") : "closed") :
        h("div", { class: "actions" }, ["acknowledge", "adopt", "start"].map(act => h("button", { type: "button", "data-drift": d.id + ":" + act,
          onclick: () => askAction({ title: act + " drift " + d.kind + " of " + d.hostname + "?",
            text: "Expected " + d.expected + ", MAAS or the workflow shows " + d.observed + ".",
            path: "/reconciliation/drift/" + encodeURIComponent(d.node_id) + "/resolve",
            body: r => ({ kind: d.kind, action: act, reason: r }) }) }, act)))]),
    state === "open" ? "No open drift: the records agree with MAAS." : "No closed drift."));
}

function policyTable(label, p) {
  return table(label, ["Setting", "Effective value"], Object.entries(p || {}).map(([k, v]) =>
    [k, typeof v === "object" ? JSON.stringify(v) : String(v)]), "No policy.");
}

async function sitesPage() {
  const sites = (await api("GET", "/maas-sites")).items;
  const profiles = await Promise.all(sites.map(s => api("GET", "/maas-sites/" + encodeURIComponent(s.id) + "/profiles").then(r => r.items)));
  const skus = (await api("GET", "/skus")).items;
  return h("div", {},
    h("h1", {}, "Sites, profiles and SKUs"), liveLine(),
    sites.length === 0 ? h("p", { class: "muted" }, "No MAAS site is registered yet.") : sites.map((s, i) => h("section", { class: "card", "aria-label": "Site " + s.name },
      h("h2", {}, "Site ", s.name, " ", h("span", { class: "muted" }, "(" + s.status + ")")),
      facts([["MAAS URL", s.maas_url], ["Credentials", s.credentials_set ? "set" : "not set"], ["Id", s.id]]),
      h("details", {}, h("summary", {}, "Effective policy of the site"), policyTable("Effective policy of site " + s.name, s.effective_policy)),
      h("h3", {}, "Profiles"),
      profiles[i].length === 0 ? h("p", { class: "muted" }, "No profile.") : profiles[i].map(p => h("details", {},
        h("summary", {}, p.name, " (", p.status || "active", ", ", p.distro_series || "", ")"),
        policyTable("Effective policy of profile " + p.name, p.effective_policy))))),
    h("h2", {}, "SKUs"),
    table("SKUs", ["SKU", "GPU model", "GPUs", "Status", "Description"], skus.map(k => [k.id, k.gpu_model, k.gpus_total, k.status || "", k.description || ""]), "No SKU."));
}

// ---- confirmed actions -----------------------------------------------------

// pendingAction is what the open confirmation dialog would run:
// { path, body(reason, extra) , after }.
let pendingAction = null;

// askAction opens the confirmation dialog: a title, what will happen, an
// optional extra control (e.g. a mode), and a reason (required unless
// reasonOptional). Nothing is sent before Confirm.
function askAction({ title, text, path, body, extra, reasonOptional }) {
  clearTimeout(refreshTimer);
  const dlg = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-extra").replaceChildren(...(extra ? [extra] : []));
  const reason = document.getElementById("confirm-reason");
  reason.value = "";
  reason.required = !reasonOptional;
  document.getElementById("confirm-reason-label").textContent = reasonOptional ?
    "Reason (optional; recorded in the audit trail)" : "Reason (recorded in the audit trail and on the timeline)";
  document.getElementById("confirm-error").textContent = "";
  pendingAction = { path, body: body || (r => ({ reason: r })), reasonOptional };
  dlg.showModal();
  (extra && extra.querySelector("select") || reason).focus();
}

function askOperation(o, op) {
  askAction({ title: "Run " + op.replaceAll("-", " ") + "?",
    text: "This runs " + op + " on the onboarding of " + o.hostname + " (now " + o.status + " at " + o.stage + ").",
    path: "/onboardings/" + encodeURIComponent(o.id) + "/" + op });
}

async function confirmOperation(ev) {
  ev.preventDefault();
  const dlg = document.getElementById("confirm");
  const reason = document.getElementById("confirm-reason").value.trim();
  if (!reason && !pendingAction.reasonOptional) { document.getElementById("confirm-error").textContent = "Give a reason."; return; }
  try {
    const path = typeof pendingAction.path === "function" ? pendingAction.path() : pendingAction.path;
    await api("POST", path, pendingAction.body(reason));
  } catch (e) {
    document.getElementById("confirm-error").textContent = e.message;
    return;
  }
  dlg.close();
  render(false);
}

document.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("signin-form").addEventListener("submit", signIn);
  document.getElementById("signin-idp-go").addEventListener("click", startIdPSignIn);
  await loadSignInConfig();
  if (signInConfig.sign_in === "oidc" && await finishIdPSignIn() && (!location.hash || location.hash === "#")) location.hash = "#/overview";
  document.getElementById("signout").addEventListener("click", () => signOut(""));
  document.getElementById("confirm-form").addEventListener("submit", confirmOperation);
  document.getElementById("confirm-cancel").addEventListener("click", () => document.getElementById("confirm").close());
  document.getElementById("confirm").addEventListener("close", () => render(false));
  window.addEventListener("hashchange", () => render(true));
  render(true);
});
