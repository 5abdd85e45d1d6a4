// lansync's web page: a client of the node's local API (/v1, Docs/API.md), like any other.
// It holds no data of its own: it reads the replica through the API, follows the change feed
// to stay current, and sends every edit to the API. Docs/UI.md describes it.
//
// Plain modern JavaScript, no library, no build step. The node serves it under a strict
// Content-Security-Policy: no inline script or style, no eval, nothing from another origin.

const TOKEN_KEY = 'lansync.token';
const PREFS_KEY = 'lansync.items';
const PAGE_SIZE = 100;             // the items view asks the node for this many items at a time
const MAX_RELOAD = 1000;           // and, to redraw what it shows after a change, at most this many
const MAX_REFETCH = 300;           // more changed items than this at once: forget them all instead
const MAX_CACHED = 5000;           // items kept for views (pages, link targets) before older ones go

const main = document.getElementById('main');
const top = document.getElementById('top');
const liveEl = document.getElementById('live');
const nodeNameEl = document.getElementById('node-name');
const conflictCountEl = document.getElementById('conflict-count');
const toastsEl = document.getElementById('toasts');

// ---------------------------------------------------------------------------------------------
// Values. A field holds null, a bool, a number, a string or a list. An integer is 64 bits and a
// double round-trips bit for bit, which a JavaScript number cannot always do (2^53 + 1, or 2.0
// that would come back as the integer 2). Where the browser can (JSON.parse's source text and
// JSON.rawJSON), such a number is kept as its JSON text, so that keeping a value in a conflict
// or bringing one back writes exactly what was read.

class Num {
  constructor(source) { this.source = source; }
  valueOf() { return Number(this.source); }
  toString() { return this.source; }
  toJSON() { return JSON.rawJSON(this.source); }
}

const exactNumbers = (() => {
  try {
    if (typeof JSON.rawJSON !== 'function') return false;
    let seen = false;
    JSON.parse('2.0', (key, value, context) => { seen = !!context && context.source === '2.0'; return value; });
    return seen && JSON.stringify([new Num('2.0')]) === '[2.0]';
  } catch {
    return false;
  }
})();

function reviver(key, value, context) {
  if (typeof value === 'number' && context && typeof context.source === 'string' && String(value) !== context.source) {
    return new Num(context.source);
  }
  return value;
}

function parseJSON(text) {
  return exactNumbers ? JSON.parse(text, reviver) : JSON.parse(text);
}

function jsonText(value) {
  return JSON.stringify(value);
}

/** A link to another item: `{"ref": ID}`, the one object that is a value. */
function isLink(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Num)
    && typeof v.ref === 'string' && Object.keys(v).length === 1;
}

function kindOf(v) {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'number' || v instanceof Num) return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  if (isLink(v)) return 'link';
  return 'other';
}

/** A value as one line of text: a string as itself, a link as its target's title, anything else as JSON. */
function valueText(v) {
  if (v === undefined) return '';
  if (typeof v === 'string') return v;
  if (isLink(v)) {
    const target = store.items.get(v.ref);
    if (!target) wantItem(v.ref);
    return target ? `→ ${itemTitle(target)}` : `@${v.ref}`;
  }
  return jsonText(v);
}

/** A value as it is typed back into an input: a link as `@ID`, the rest as `valueText`. */
function inputText(v) {
  return isLink(v) ? `@${v.ref}` : valueText(v);
}

function sameValue(a, b) {
  return jsonText(a) === jsonText(b);
}

function shorten(text, n = 60) {
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

/**
 * What a person typed, read as the CLI reads an assignment's value: JSON when it is valid JSON
 * (2, true, null, ["a", "b"], "2"), text otherwise. With `asText` (a field that holds text), the
 * text is kept as it is. Text that starts like JSON but is not valid JSON is a mistake to show,
 * not a string to save.
 */
function readInput(text, asText) {
  if (asText) return { value: text };
  const t = text.trim();
  if (t === '') return { value: text };
  // `@ID` (a unique start of an item's id) is a link, as on the command line: the node resolves
  // the start, and says so if no item's id, or several, start with it.
  if (/^@[A-Za-z0-9._:-]+$/.test(t)) return { value: { ref: t.slice(1) } };
  try {
    return { value: parseJSON(t) };
  } catch (e) {
    if (/^[[{"]/.test(t)) {
      const why = String(e.message || e).replace(/^JSON\.parse: |^SyntaxError: /, '');
      return {
        error: `“${shorten(t, 40)}” is not valid JSON (${why}). A list is written ["a", "b"]; to keep it as text, put it in quotes.`,
      };
    }
    return { value: text };
  }
}

// ---------------------------------------------------------------------------------------------
// DOM helpers. Text always goes in as text nodes: nothing from the replica is parsed as HTML.

function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'value' || k === 'checked') el[k] = v;
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  add(el, kids);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element, as h() makes an HTML one (attributes only: no handlers). */
function svgEl(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, String(v));
  }
  add(el, kids);
  return el;
}

/** Replaces an element's children; null, undefined and false are left out, arrays flattened. */
function fill(el, ...kids) {
  el.replaceChildren();
  add(el, kids);
}

function add(el, kids) {
  for (const kid of kids) {
    if (kid === null || kid === undefined || kid === false) continue;
    if (Array.isArray(kid)) add(el, kid);
    else el.append(kid instanceof Node ? kid : String(kid));
  }
}

let idCounter = 0;
function uid(prefix) {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

/**
 * Runs `change` (which may replace elements) and puts the keyboard focus back where it was: on
 * the element with the same data-key inside the same data-scope, when the focused one was replaced.
 */
function keepFocus(change) {
  const active = document.activeElement;
  const key = active && active.dataset ? active.dataset.key : undefined;
  const scopeEl = active && active.closest ? active.closest('[data-scope]') : null;
  const scope = scopeEl ? scopeEl.dataset.scope : undefined;
  change();
  if (!active || active === document.body) return;
  if (active.isConnected) {
    // Moved rather than replaced: moving a focused element takes the focus away from it.
    if (document.activeElement !== active) active.focus({ preventScroll: true });
    return;
  }
  if (!key) return;
  let next = null;
  if (scope !== undefined) {
    next = document.querySelector(`[data-scope="${CSS.escape(scope)}"] [data-key="${CSS.escape(key)}"]`);
  } else {
    next = document.querySelector(`[data-key="${CSS.escape(key)}"]`);
  }
  if (next) next.focus({ preventScroll: true });
}

function renderValue(v) {
  switch (kindOf(v)) {
    case 'null':
      return h('span', { class: 'v-null' }, 'null');
    case 'bool':
      return h('span', { class: 'v-bool' }, String(v));
    case 'number':
      return h('span', { class: 'v-num' }, String(v));
    case 'string':
      return v === '' ? h('span', { class: 'v-null' }, 'empty text') : h('span', { class: 'v-str' }, v);
    case 'list':
      if (v.length === 0) return h('span', { class: 'v-null' }, 'empty list');
      return h('span', { class: 'chips' }, v.map((e) => h('span', { class: 'chip' }, valueText(e))));
    case 'link': {
      const target = store.items.get(v.ref);
      if (!target) wantItem(v.ref);
      return h('a', { class: 'v-link', href: `#/item/${encodeURIComponent(v.ref)}`, 'data-key': `link:${v.ref}`, title: v.ref },
        '→ ', target ? itemTitle(target) : shortId(v.ref),
        store.missing.has(v.ref) ? [' ', h('span', { class: 'badge deleted' }, 'missing')]
          : target && target.deleted ? [' ', h('span', { class: 'badge deleted' }, 'deleted')] : null);
    }
    default:
      return h('span', null, jsonText(v));
  }
}

function relTime(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso || '';
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const hours = Math.round(m / 60);
  if (hours < 24) return `${hours} h ago`;
  return new Date(t).toLocaleString();
}

function timeEl(iso) {
  if (!iso) return h('span', { class: 'muted' }, 'never');
  const t = Date.parse(iso);
  return h('time', { datetime: iso, title: Number.isNaN(t) ? iso : new Date(t).toLocaleString() }, relTime(iso));
}

function toast(message, { error = false, action = null, timeout } = {}) {
  const close = () => el.remove();
  const el = h('div', { class: error ? 'toast error' : 'toast', role: error ? 'alert' : null },
    h('p', null, message),
    action && h('button', { type: 'button', onclick: () => { close(); action.run(); } }, action.label),
    h('button', { type: 'button', 'aria-label': 'Dismiss this message', onclick: close }, '×'));
  toastsEl.append(el);
  while (toastsEl.children.length > 4) toastsEl.firstElementChild.remove();
  setTimeout(close, timeout || (error ? 9000 : action ? 7000 : 3500));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// The API. Every request carries the token; a 401 sends the page back to its login form, and a
// problem's `detail` (the CLI's sentence for the same mistake) is what the user reads.

let token = readToken();
let session = 0;            // bumped at each login and logout, so that old loops stop
const inflight = new Set();  // the API requests under way, which a logout lets land first

function readToken() {
  try { return localStorage.getItem(TOKEN_KEY); } catch { return null; }
}
function saveToken(value) {
  token = value;
  try {
    if (value) localStorage.setItem(TOKEN_KEY, value);
    else localStorage.removeItem(TOKEN_KEY);
  } catch { /* a browser without storage: the token lasts as long as the page */ }
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const UNREACHABLE = `The node at ${location.host} does not answer: is 'lansync node' running? The page reconnects by itself when it is back.`;

/** The CLI's sentences start in lower case and end without a stop; on a page they read better as sentences. */
function sentence(text) {
  const t = String(text).trim();
  if (!t) return t;
  return t.charAt(0).toUpperCase() + t.slice(1) + (/[.!?]$/.test(t) ? '' : '.');
}

async function readProblem(res) {
  let text = '';
  try { text = await res.text(); } catch { /* the body was cut */ }
  try {
    const problem = JSON.parse(text);
    if (problem && typeof problem.detail === 'string' && problem.detail) return sentence(problem.detail);
  } catch { /* not JSON */ }
  return `The node answered ${res.status} ${res.statusText || ''}`.trim() + '.';
}

async function api(method, path, body) {
  const mine = session;
  // A timer set before a logout may still fire: without a token there is nothing to ask, and its
  // refusal must not replace what the logout said.
  if (!token) throw new ApiError(401, 'The page is logged out.');
  const headers = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  const request = fetch(path, { method, headers, body: body === undefined ? undefined : jsonText(body), cache: 'no-store' });
  inflight.add(request);
  try {
    res = await request;
  } catch {
    throw new ApiError(0, UNREACHABLE);
  } finally {
    inflight.delete(request);
  }
  if (res.status === 401) {
    if (mine === session) unauthorized();
    throw new ApiError(401, 'The node did not accept the token.');
  }
  if (!res.ok) throw new ApiError(res.status, await readProblem(res));
  const text = await res.text();
  return text ? parseJSON(text) : null;
}

const itemPath = (id) => `/v1/items/${encodeURIComponent(id)}`;

// ---------------------------------------------------------------------------------------------
// What the page knows: the items it has read (the items view's pages, an item shown, the targets
// of links shown), how many items there are of each type, the open conflicts and the node's
// status, all from the API. The node answers the items view's questions (a page, a type, a
// search, an order) from its indexes, so the page never reads every item. Views subscribe to
// changes; the change feed keeps what was read current.

const store = {
  items: new Map(),
  missing: new Set(),              // ids the node answered 404 for (a link to an item not here)
  fetching: new Set(),
  summary: null,                   // GET /v1/summary: counts by type, the indexed fields
  readOnly: null,                  // why this machine may only read (a reader, Docs/SECURITY.md), or null
  viewing: new Set(),              // ids the items view shows: it reads them again itself
  conflicts: [],
  conflictsReady: false,
  conflictsError: null,
  status: null,
  statusError: null,
  listeners: new Set(),
  shortIds: null,
};

function emit(what, ids) {
  for (const fn of [...store.listeners]) {
    try { fn(what, ids); } catch (e) { console.error('the page failed to show a change:', e); }
  }
}
function subscribe(fn) {
  store.listeners.add(fn);
  return () => store.listeners.delete(fn);
}

/** Keeps an item read from the node; true if it was not held before or has changed. */
function cacheItem(item) {
  const before = store.items.get(item.id);
  if (!before) store.shortIds = null;
  store.missing.delete(item.id);
  store.items.set(item.id, item);
  const changedConflicts = before ? jsonText(before.conflicts) !== jsonText(item.conflicts) : item.conflicts.length > 0;
  if (changedConflicts) scheduleConflicts();
  return !before || jsonText(before) !== jsonText(item);
}

function putItem(item) {
  cacheItem(item);
  emit('items', [item.id]);
}

/** Forgets items no view needs (`keep`: ids still shown) once more than MAX_CACHED are held. */
function pruneItems(keep) {
  if (store.items.size <= MAX_CACHED) return;
  for (const id of store.items.keys()) if (!keep.has(id)) store.items.delete(id);
  store.shortIds = null;
}

/** Reads an item a view shows but the page has not read (a link's target), once. */
function wantItem(id) {
  if (store.items.has(id) || store.missing.has(id) || store.fetching.has(id)) return;
  const mine = session;
  store.fetching.add(id);
  api('GET', itemPath(id)).then((item) => {
    if (mine === session) putItem(item);
  }, (e) => {
    if (mine === session && e.status === 404) { store.missing.add(id); emit('items', [id]); }
  }).finally(() => store.fetching.delete(id));
}

/**
 * A reader's node (Docs/SECURITY.md, "Roles"): every member would refuse its edits, so the page
 * offers none and says why; the API refuses them too (403).
 */
function showReadOnly(why) {
  const changed = store.readOnly !== why;
  store.readOnly = why;
  document.body.classList.toggle('read-only', !!why);
  const bar = document.getElementById('read-only');
  if (bar) {
    bar.hidden = !why;
    bar.textContent = why
      ? `Read only: this machine is a reader in the cluster (${why}); the other members would refuse its edits. An admitting machine can make it a writer again.`
      : '';
  }
  if (changed) emit('items', null);
}

/** The item counts by type and the indexed fields, read again a little after changes. */
async function loadSummary() {
  const mine = session;
  try {
    const summary = await api('GET', '/v1/summary');
    if (mine !== session) return;
    store.summary = summary;
    showReadOnly(summary.read_only || null);
  } catch (e) {
    if (mine !== session) return;
  }
  emit('summary');
}
let summaryTimer = null;
function scheduleSummary() {
  clearTimeout(summaryTimer);
  summaryTimer = setTimeout(loadSummary, 300);
}

async function loadConflicts() {
  const mine = session;
  try {
    const list = await api('GET', '/v1/conflicts');
    if (mine !== session) return;
    store.conflicts = list;
    store.conflictsReady = true;
    store.conflictsError = null;
  } catch (e) {
    if (mine !== session) return;
    store.conflictsError = e.message;
  }
  showConflictCount();
  emit('conflicts');
}

let conflictsTimer = null;
function scheduleConflicts() {
  clearTimeout(conflictsTimer);
  conflictsTimer = setTimeout(loadConflicts, 80);
}

function showConflictCount() {
  const n = store.conflicts.length;
  conflictCountEl.hidden = n === 0;
  conflictCountEl.textContent = String(n);
  conflictCountEl.setAttribute('aria-label', `${n} open`);
}

/** The shortest start of each id that no other id the page holds shares (at least 8), as the CLI shows. */
function shortId(id) {
  if (!store.shortIds) {
    const ids = [...store.items.keys()].sort();
    const common = (a, b) => {
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
      return i;
    };
    store.shortIds = new Map();
    ids.forEach((x, i) => {
      const need = Math.max(i > 0 ? common(x, ids[i - 1]) : 0, i + 1 < ids.length ? common(x, ids[i + 1]) : 0) + 1;
      store.shortIds.set(x, x.slice(0, Math.max(8, need)));
    });
  }
  return store.shortIds.get(id) || id.slice(0, 8);
}

function itemTitle(item) {
  if (!item) return '';
  for (const f of ['title', 'name']) {
    const v = item.fields[f];
    if (typeof v === 'string' && v.trim() !== '') return v;
    if (kindOf(v) === 'number') return String(v);
  }
  return shortId(item.id);
}

function writerName(writer, node) {
  if (writer) return writer;
  return node ? `node ${node.slice(0, 7)}` : 'an unknown node';
}

// ---------------------------------------------------------------------------------------------
// The change feed: GET /v1/changes as Server-Sent Events, read with fetch (EventSource cannot
// send the token) and resumed after a drop with Last-Event-ID, so nothing is missed or repeated.
// Each change names an item: the page fetches it again (the item, with its conflicts and sync
// state, is what the views show).

const feed = { lastId: null, controller: null, connected: false };
const pending = new Set();
let flushTimer = null;

function setLive(state) {
  feed.connected = state === 'on';
  liveEl.className = `live ${state}`;
  liveEl.textContent = state === 'on' ? 'Live' : state === 'off' ? 'Reconnecting…' : 'Connecting…';
  liveEl.title = state === 'on'
    ? 'Following the node’s change feed: edits from anywhere show here as they arrive.'
    : 'The change feed is not connected; the page retries every few seconds.';
}

function startFeed(mine) {
  let first;
  const firstTry = new Promise((resolve) => { first = resolve; });
  let initial = true;
  (async () => {
    let delay = 1000;
    while (mine === session) {
      const controller = new AbortController();
      feed.controller = controller;
      try {
        const headers = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
        if (feed.lastId !== null) headers['Last-Event-ID'] = feed.lastId;
        const res = await fetch('/v1/changes?sync=true', { headers, signal: controller.signal, cache: 'no-store' });
        if (res.status === 401) {
          if (mine === session) unauthorized();
          return;
        }
        if (!res.ok || !res.body) throw new Error(`status ${res.status}`);
        setLive('on');
        delay = 1000;
        // A first connection that came late, with no event to resume from: what happened before
        // it is not in the stream, so read everything again.
        if (!initial && feed.lastId === null) resync();
        // Acknowledgements made while it was down are not replayed: read what they may have moved.
        else if (!initial) onSync();
        initial = false;
        first(true);
        await readEvents(res.body, mine);
      } catch (e) {
        if (mine !== session || (e && e.name === 'AbortError')) return;
      }
      initial = false;
      first(false);
      if (mine !== session) return;
      setLive('off');
      await sleep(delay);
      delay = Math.min(delay * 2, 4000);
    }
  })();
  return firstTry;
}

async function readEvents(body, mine) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let data = [];
  let event = 'message';
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done || mine !== session) return;
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (id !== null) feed.lastId = id;
        if (data.length && event === 'change') {
          try { onChange(parseJSON(data.join('\n'))); } catch (e) { console.warn('a change the page could not read', e); }
        } else if (event === 'sync') {
          onSync();
        }
        data = [];
        event = 'message';
        id = null;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? '' : line.slice(colon + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (name === 'data') data.push(val);
      else if (name === 'id') id = val;
      else if (name === 'event') event = val;
    }
  }
}

// The cluster view follows the feed: a change here moves what each peer lacks, an
// acknowledgement what it holds; the status is read again soon after either, not only at its
// one-second poll.
let clusterStatusTimer = null;
function refreshClusterSoon() {
  if (currentRoute !== 'cluster' || clusterStatusTimer) return;
  clusterStatusTimer = setTimeout(() => { clusterStatusTimer = null; refreshStatus(); }, 150);
}

function onChange(change) {
  if (!change || typeof change.id !== 'string') return;
  refreshClusterSoon();
  pending.add(change.id);
  if (change.kind === 'conflict' || change.kind === 'settle') scheduleConflicts();
  emit('change', change);
  scheduleFlush();
  scheduleSummary();
}

function scheduleFlush() {
  if (flushTimer) return;
  flushTimer = setTimeout(flush, 40);
}

// Changed items the page holds are read again, except those the items view shows: it asks its
// question again (a new item may belong on it, a changed one move) on the 'changed' event, and
// that answer brings them.
async function flush() {
  flushTimer = null;
  const ids = [...pending];
  pending.clear();
  if (ids.length === 0) return;
  emit('changed', ids);
  const held = ids.filter((id) => (store.items.has(id) || store.missing.has(id)) && !store.viewing.has(id));
  if (held.length > MAX_REFETCH) {
    for (const id of held) store.items.delete(id);
    store.shortIds = null;
    emit('items', null);
    return;
  }
  await refetch(held);
}

async function refetch(ids) {
  const mine = session;
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next];
      next += 1;
      try {
        const item = await api('GET', itemPath(id));
        if (mine === session) putItem(item);
      } catch (e) {
        if (e.status === 404 && mine === session) {
          store.items.delete(id);
          store.missing.add(id);
          store.shortIds = null;
          emit('items', [id]);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(6, ids.length) }, worker));
}

// Everything the page read may be out of date (the feed could not resume): read it again.
async function resync() {
  store.items.clear();
  store.missing.clear();
  store.shortIds = null;
  emit('items', null);
  await Promise.all([loadSummary(), loadConflicts()]);
}

// An item's sync state (DIRTY, SYNCING, SYNCED) moves when a peer acknowledges, which is not a
// change of the replica: the feed (asked with sync=true) says so with a `sync` event, and the
// items shown as not yet synced are fetched again. The node's status is read once when the page
// starts (the node's name), and every second only while the cluster view shows it.

let statusTimer = null;
let pollGeneration = 0;
let syncTimer = null;

function onSync() {
  refreshClusterSoon();
  if (syncTimer) return;
  syncTimer = setTimeout(() => {
    syncTimer = null;
    const unsynced = [...store.items.values()]
      .filter((it) => it.sync && it.sync.state !== 'SYNCED')
      .map((it) => it.id);
    if (unsynced.length <= MAX_REFETCH) { refetch(unsynced); return; }
    for (const id of unsynced) store.items.delete(id);
    emit('items', null);
  }, 100);
}

async function refreshStatus() {
  const mine = session;
  try {
    const s = await api('GET', '/v1/status');
    if (mine !== session) return;
    store.status = s;
    store.statusError = null;
    nodeNameEl.textContent = s.name ? `${s.name}` : '';
  } catch (e) {
    if (mine !== session) return;
    store.statusError = e.message;
  }
  emit('status');
}

function pollStatus(mine) {
  clearTimeout(statusTimer);
  if (mine !== session) return;
  pollGeneration += 1;
  const generation = pollGeneration;
  refreshStatus().finally(() => {
    if (mine !== session || generation !== pollGeneration) return;
    if (currentRoute === 'cluster') statusTimer = setTimeout(() => pollStatus(mine), 1000);
  });
}

// ---------------------------------------------------------------------------------------------
// Logging in: the link 'lansync ui' prints ends in #login=CODE, which POST /v1/login trades once
// for the token; otherwise the user pastes the token 'lansync api-token' prints.

function stopSession() {
  session += 1;
  if (feed.controller) feed.controller.abort();
  feed.controller = null;
  feed.lastId = null;
  clearTimeout(statusTimer);
  clearTimeout(syncTimer);
  syncTimer = null;
  clearTimeout(flushTimer);
  flushTimer = null;
  clearTimeout(summaryTimer);
  clearTimeout(conflictsTimer);
  pending.clear();
  if (currentView && currentView.destroy) currentView.destroy();
  currentView = null;
  currentRoute = null;
  showReadOnly(null);
  Object.assign(store, {
    items: new Map(), itemsReady: false, itemsError: null, truncated: false, loading: false,
    conflicts: [], conflictsReady: false, conflictsError: null, status: null, statusError: null, shortIds: null,
  });
}

function unauthorized() {
  saveToken(null);
  showLogin('This node did not accept the token the page held: it was changed, or another node now answers at this address. Log in again.');
}

function showLogin(message) {
  stopSession();
  top.hidden = true;
  const errId = uid('login-error');
  const input = h('input', {
    type: 'password', id: 'token', name: 'token', autocomplete: 'off', spellcheck: 'false',
    'aria-describedby': errId, required: true,
  });
  const error = h('p', { class: 'error-text', id: errId, role: 'alert' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Log in');
  const form = h('form', { novalidate: true },
    h('label', { class: 'stack', for: 'token' }, h('span', null, 'API token')),
    input, error, button);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const value = input.value.trim();
    error.textContent = '';
    if (!value) {
      error.textContent = "Paste the token first: 'lansync api-token' prints it.";
      input.focus();
      return;
    }
    button.disabled = true;
    try {
      const res = await fetch('/v1/status', { headers: { Authorization: `Bearer ${value}` }, cache: 'no-store' });
      if (res.status === 401) {
        error.textContent = "This node does not accept that token. Check that it is the one 'lansync api-token' prints for this node's data directory.";
        input.select();
        return;
      }
      if (!res.ok) {
        error.textContent = await readProblem(res);
        return;
      }
      saveToken(value);
      start();
    } catch {
      error.textContent = UNREACHABLE;
    } finally {
      button.disabled = false;
    }
  });
  const view = h('section', { class: 'panel login', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title', tabindex: '-1' }, 'Log in to this node'),
    h('p', { class: 'sub' }, `This page shows and edits the replica of the lansync node at ${location.host}.`),
    message && h('p', { class: 'notice', role: 'alert' }, message),
    form,
    h('p', { class: 'hint' },
      'On the node’s machine, ', h('code', null, 'lansync ui'), ' prints a link that logs in by itself, and ',
      h('code', null, 'lansync api-token'), ' prints the token.'));
  fill(main, view);
  document.title = 'Log in · lansync';
  input.focus();
}

async function redeemLoginCode(code) {
  try {
    const res = await fetch('/v1/login', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }), cache: 'no-store',
    });
    if (!res.ok) return { error: await readProblem(res) };
    const data = await res.json();
    if (!data || typeof data.token !== 'string') return { error: 'The node answered the login without a token.' };
    return { token: data.token };
  } catch {
    return { error: UNREACHABLE };
  }
}

async function boot() {
  const match = /^#login=(.+)$/.exec(location.hash);
  if (match) {
    let code = match[1];
    try { code = decodeURIComponent(code); } catch { /* keep it as it is */ }
    // The code is spent either way: take it out of the address bar and the history.
    history.replaceState(null, '', `${location.pathname}${location.search}#/items`);
    const answer = await redeemLoginCode(code);
    if (answer.token) {
      saveToken(answer.token);
    } else if (token) {
      start();
      toast(`The login link did not work: ${answer.error} The page used the token it already held.`, { error: true });
      return;
    } else {
      showLogin(answer.error);
      return;
    }
  }
  if (!token) {
    showLogin();
    return;
  }
  start();
}

async function start() {
  stopSession();
  const mine = session;
  top.hidden = false;
  setLive('connecting');
  fill(main, h('p', { class: 'loading' }, 'Loading…'));
  // The feed first, then the data: whatever changes in between arrives through the feed.
  await Promise.race([startFeed(mine), sleep(2500)]);
  if (mine !== session) return;
  pollStatus(mine);
  route();
  await resync();
}

// Logging out ends this page's session on the node (the link's login); a page logged in with the
// node's own token can only forget it here (`lansync api-token --rotate` replaces that one).
document.getElementById('logout').addEventListener('click', async () => {
  const held = token;
  // Nothing else of this session may ask the node once its token is about to be refused, and
  // what it already asked lands first (at most two seconds): a request the node read after the
  // session ended would be refused, which the browser reports as an error.
  stopSession();
  saveToken(null);
  await Promise.race([Promise.allSettled([...inflight]), sleep(2000)]);
  let ended = false;
  try {
    const res = await fetch('/v1/session', { method: 'DELETE', headers: { Authorization: `Bearer ${held}` }, cache: 'no-store' });
    ended = res.ok;
  } catch {
    ended = false;
  }
  showLogin(ended
    ? 'You are logged out: this page’s session has ended on the node.'
    : 'You are logged out here. The token you logged in with is the node’s own and stays valid: ‘lansync api-token --rotate’ replaces it.');
});

// ---------------------------------------------------------------------------------------------
// Routing: #/items, #/item/ID, #/conflicts, #/cluster.

let currentView = null;
let currentRoute = null;

function route() {
  if (!token) return;
  const hash = location.hash;
  let name;
  let view;
  let m;
  if (hash === '' || hash === '#' || hash === '#/' || hash === '#/items') {
    name = 'items';
  } else if ((m = /^#\/item\/(.+)$/.exec(hash))) {
    name = 'item';
  } else if (hash === '#/conflicts') {
    name = 'conflicts';
  } else if (hash === '#/cluster') {
    name = 'cluster';
  } else {
    history.replaceState(null, '', '#/items');
    name = 'items';
  }
  const firstView = currentView === null;
  if (currentView && currentView.destroy) currentView.destroy();
  currentRoute = name;
  if (name === 'items') view = itemsView();
  else if (name === 'item') {
    let id = m[1];
    try { id = decodeURIComponent(id); } catch { /* as it is */ }
    view = itemView(id);
  } else if (name === 'conflicts') view = conflictsView();
  else view = clusterView();
  currentView = view;
  fill(main, view.el);
  for (const [navName, el] of [['items', 'nav-items'], ['conflicts', 'nav-conflicts'], ['cluster', 'nav-cluster']]) {
    const link = document.getElementById(el);
    if (navName === name || (name === 'item' && navName === 'items')) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (name === 'cluster') pollStatus(session);
  else clearTimeout(statusTimer);
  if (!firstView) {
    const heading = main.querySelector('h1');
    if (heading) heading.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  }
}

window.addEventListener('hashchange', () => {
  if (/^#login=/.test(location.hash)) { boot(); return; }
  route();
});

function setTitle(text) {
  const node = store.status && store.status.name ? ` · ${store.status.name}` : '';
  document.title = `${text}${node} · lansync`;
}

// ---------------------------------------------------------------------------------------------
// A field's value that turns into its editor: text for a scalar, chips for a list (each one
// removable, and a box to add one). Used by the items table and by the item view.

class FieldCell {
  constructor(id, field, { onClose } = {}) {
    this.id = id;
    this.field = field;
    this.onClose = onClose;
    this.mode = 'show';
    this.busy = false;
    this.el = h('div', { class: 'fv' });
    this.render();
  }

  get item() { return store.items.get(this.id); }
  get editing() { return this.mode !== 'show'; }

  /** The item changed: show it, unless the user is typing a scalar's new value. */
  refresh() {
    if (this.mode === 'scalar') return;
    this.render();
  }

  render() {
    keepFocus(() => this.draw());
  }

  draw() {
    const item = this.item;
    if (!item) { fill(this.el); return; }
    if (this.mode === 'list') { this.renderList(item); return; }
    if (this.mode === 'scalar') { this.renderScalar(item); return; }
    const has = Object.prototype.hasOwnProperty.call(item.fields, this.field);
    const v = item.fields[this.field];
    const shown = has ? renderValue(v) : h('span', { class: 'v-missing' }, '—');
    const inConflict = item.conflicts.includes(this.field);
    const mark = inConflict
      ? h('a', { class: 'conflict-mark', href: '#/conflicts', 'data-key': `c:${this.field}` }, '⚠ conflict')
      : null;
    if (item.deleted || store.readOnly) {
      fill(this.el, h('span', { class: 'static' }, shown), mark);
      return;
    }
    const what = has ? shorten(valueText(v), 80) : 'not set';
    // A link is followed by a click; its own small button edits it (a link inside a button
    // would be neither).
    if (has && isLink(v)) {
      fill(this.el, shown, ' ', h('button', {
        type: 'button', class: 'small quiet', 'data-key': `f:${this.field}`,
        'aria-label': `${this.field}: ${what}${inConflict ? ' (in conflict)' : ''}. Edit`,
        onclick: () => this.open(),
      }, 'Edit'), mark);
      return;
    }
    fill(this.el, 
      h('button', {
        type: 'button', class: 'show', 'data-key': `f:${this.field}`,
        'aria-label': `${this.field}: ${what}${inConflict ? ' (in conflict)' : ''}. Edit`,
        onclick: () => this.open(),
      }, shown),
      mark);
  }

  open() {
    const item = this.item;
    if (!item || item.deleted || store.readOnly) return;
    this.mode = Array.isArray(item.fields[this.field]) ? 'list' : 'scalar';
    this.addInput = null;
    this.error = null;
    this.render();
    const input = this.el.querySelector('input');
    if (input) { input.focus(); if (this.mode === 'scalar') input.select(); }
  }

  close(focus = true) {
    this.mode = 'show';
    this.render();
    if (focus) {
      const button = this.el.querySelector('button.show');
      if (button) button.focus();
    }
    if (this.onClose) this.onClose();
  }

  showError(message) {
    this.error = message;
    const p = this.el.querySelector('.error-text');
    if (p) p.textContent = message || '';
  }

  async patch(body, okMessage) {
    this.busy = true;
    try {
      const item = await api('PATCH', itemPath(this.id), body);
      putItem(item);
      if (okMessage) announce(okMessage);
      return true;
    } catch (e) {
      this.showError(e.message);
      return false;
    } finally {
      this.busy = false;
    }
  }

  renderScalar(item) {
    const has = Object.prototype.hasOwnProperty.call(item.fields, this.field);
    const v = item.fields[this.field];
    const asText = kindOf(v) === 'string';
    const initial = has ? inputText(v) : '';
    const errId = uid('err');
    const hintId = uid('hint');
    const input = h('input', {
      type: 'text', value: initial, 'aria-label': `New value of ${this.field}`,
      'aria-describedby': `${hintId} ${errId}`, 'data-key': `e:${this.field}`,
    });
    const save = async () => {
      if (this.busy) return;
      if (input.value === initial) { this.close(); return; }
      const read = readInput(input.value, asText);
      if (read.error) { this.showError(read.error); input.focus(); return; }
      if (await this.patch({ set: { [this.field]: read.value } }, `Saved ${this.field}.`)) this.close();
    };
    input.addEventListener('input', () => { if (this.error) this.showError(null); });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { ev.preventDefault(); save(); }
      else if (ev.key === 'Escape') { ev.preventDefault(); this.close(); }
    });
    const wrap = h('div', { class: 'scalar-edit' },
      h('div', { class: 'edit-row' },
        input,
        h('button', { type: 'button', class: 'small primary', onclick: save }, 'Save'),
        h('button', { type: 'button', class: 'small quiet', onclick: () => this.close() }, 'Cancel')),
      h('p', { class: 'hint', id: hintId }, asText
        ? 'Enter saves, Escape cancels. Text stays text.'
        : 'Enter saves, Escape cancels. Read like the CLI: JSON when valid (2, true, ["a"]), text otherwise.'),
      h('p', { class: 'error-text', id: errId, role: 'alert' }, this.error || ''));
    // Leaving the editor saves what changed (as a spreadsheet does), or just closes it.
    wrap.addEventListener('focusout', (ev) => {
      if (ev.relatedTarget && wrap.contains(ev.relatedTarget)) return;
      setTimeout(() => {
        if (this.mode !== 'scalar' || wrap.contains(document.activeElement) || !wrap.isConnected) return;
        if (input.value === initial) this.close(false);
        else if (!this.error) save();
      }, 0);
    });
    fill(this.el, wrap);
  }

  renderList(item) {
    const list = Array.isArray(item.fields[this.field]) ? item.fields[this.field] : [];
    const asText = list.every((e) => typeof e === 'string');
    const errId = this.errId || (this.errId = uid('err'));
    if (!this.addInput) {
      this.addInput = h('input', {
        type: 'text', class: 'chip-add', placeholder: 'Add…', 'aria-label': `Add to ${this.field}`,
        'aria-describedby': errId, 'data-key': `a:${this.field}`,
      });
      this.addInput.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter') { ev.preventDefault(); this.addElement(); }
        else if (ev.key === 'Escape') { ev.preventDefault(); this.close(); }
      });
    }
    this.addInput.dataset.asText = asText ? '1' : '';
    const chips = list.map((e, i) => {
      const text = valueText(e);
      return h('span', { class: 'chip' }, text === '' ? h('span', { class: 'v-null' }, 'empty text') : text,
        h('button', {
          type: 'button', 'aria-label': `Remove ${shorten(text, 40) || 'empty text'} from ${this.field}`,
          'data-key': `r:${this.field}:${i}`, onclick: () => this.removeElement(e, i),
        }, '×'));
    });
    const wrap = h('div', { class: 'list-edit', role: 'group', 'aria-label': `Edit the list ${this.field}` },
      h('span', { class: 'chips' }, chips.length ? chips : h('span', { class: 'v-null' }, 'empty list')),
      h('div', { class: 'edit-row' },
        this.addInput,
        h('button', { type: 'button', class: 'small', onclick: () => this.addElement() }, 'Add'),
        h('button', { type: 'button', class: 'small quiet', 'data-key': `d:${this.field}`, onclick: () => this.close() }, 'Done')),
      h('p', { class: 'error-text', id: errId, role: 'alert' }, this.error || ''));
    wrap.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') { ev.preventDefault(); this.close(); }
    });
    wrap.addEventListener('focusout', (ev) => {
      if (ev.relatedTarget && wrap.contains(ev.relatedTarget)) return;
      setTimeout(() => {
        if (this.mode !== 'list' || this.busy || !wrap.isConnected) return;
        if (this.el.contains(document.activeElement)) return;
        if (this.addInput.value.trim() === '') this.close(false);
      }, 0);
    });
    fill(this.el, wrap);
  }

  async addElement() {
    if (this.busy) return;
    const text = this.addInput.value;
    if (text.trim() === '') { this.showError('Type the element to add first.'); return; }
    const read = readInput(text, this.addInput.dataset.asText === '1');
    if (read.error) { this.showError(read.error); return; }
    this.showError(null);
    if (await this.patch({ add: { [this.field]: [read.value] } }, `Added ${shorten(valueText(read.value), 40)} to ${this.field}.`)) {
      this.addInput.value = '';
      this.addInput.focus();
    }
  }

  async removeElement(element, index) {
    if (this.busy) return;
    this.showError(null);
    if (await this.patch({ remove: { [this.field]: [element] } }, `Removed ${shorten(valueText(element), 40)} from ${this.field}.`)) {
      if (this.mode !== 'list') return;
      const buttons = this.el.querySelectorAll('.chip button');
      const next = buttons[Math.min(index, buttons.length - 1)];
      (next || this.addInput).focus();
    }
  }
}

// A polite announcement for screen readers, without a toast for every small edit.
const announcer = h('div', { class: 'visually-hidden', role: 'status', 'aria-live': 'polite' });
document.body.append(announcer);
function announce(text) {
  announcer.textContent = '';
  setTimeout(() => { announcer.textContent = text; }, 30);
}

async function deleteItem(item) {
  try {
    putItem(await api('DELETE', itemPath(item.id)));
    toast(`Deleted “${shorten(itemTitle(item), 40)}”.`, { action: { label: 'Undo', run: () => restoreItem(item) } });
  } catch (e) {
    toast(e.message, { error: true });
  }
}

async function restoreItem(item) {
  try {
    putItem(await api('POST', `${itemPath(item.id)}/restore`));
    toast(`Restored “${shorten(itemTitle(item), 40)}”.`);
  } catch (e) {
    toast(e.message, { error: true });
  }
}

function syncBadge(sync) {
  if (!sync) {
    return h('span', { class: 'badge', title: 'No edit made on this node is live: there is nothing of this node’s to send.' }, '—');
  }
  const holders = (sync.peers || []).map((p) => p.name || p.node.slice(0, 7));
  const explain = {
    DIRTY: 'This node’s latest edit has not reached another machine yet.',
    SYNCING: 'Some machines have this node’s latest edit, not yet all of them (or the relay).',
    SYNCED: 'Every peer (or the relay) has this node’s latest edit.',
  }[sync.state] || '';
  const title = holders.length ? `${explain} Held by: ${holders.join(', ')}.` : explain;
  return h('span', { class: `badge ${sync.state.toLowerCase()}`, title }, sync.state);
}

// ---------------------------------------------------------------------------------------------
// The items view: a table with a type filter, a search box, sorting, a choice of columns, a
// form for a new item, inline edits, delete and restore. What it shows is a question to the
// node (GET /v1/items with type, deleted, q and sort), read a page at a time: the node answers
// from its indexes however many items it holds. A change in the feed asks it again.

function loadPrefs() {
  const fallback = { type: '', showDeleted: false, sort: { key: '@id', dir: 1 }, columns: {} };
  try {
    const p = { ...fallback, ...JSON.parse(localStorage.getItem(PREFS_KEY) || '{}') };
    // Type and Sync were sortable when the page held every item; the node sorts by fields.
    if (p.sort.key === '@type' || p.sort.key === '@sync' || (p.sort.key === '@id' && p.sort.dir < 0)) p.sort = fallback.sort;
    return p;
  } catch {
    return fallback;
  }
}
function savePrefs(p) {
  try { localStorage.setItem(PREFS_KEY, JSON.stringify(p)); } catch { /* none */ }
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

function columnName(key) {
  return key === '@id' ? 'Item' : key === '@type' ? 'Type' : key === '@sync' ? 'Sync' : key;
}

function itemsView() {
  const prefs = loadPrefs();
  let search = '';
  const rows = new Map();     // id -> { tr, item, cells }
  let columns = [];
  let fieldNames = [];
  let typesSignature = '';
  let unsubscribe = null;
  // What the node answered: the ids shown, in its order, and where the next page starts.
  let shown = [];
  let next = null;
  let loaded = false;
  let loadError = null;
  let loading = false;
  let generation = 0;
  let reloadTimer = null;

  const el = h('section', { 'aria-labelledby': 'items-title' });
  const countEl = h('p', { class: 'sub', id: 'items-count' });
  const typeSelect = h('select', { id: 'type-filter', 'data-key': 'type-filter' });
  const searchInput = h('input', {
    type: 'search', id: 'item-search', placeholder: 'Words, values, an id…', 'data-key': 'search', autocomplete: 'off',
  });
  const deletedBox = h('input', { type: 'checkbox', id: 'show-deleted', checked: prefs.showDeleted });
  // A group, not a <fieldset>: Chromium leaves a fieldset refilled inside a closed <details> blank when it opens.
  const columnsBody = h('div', { role: 'group', 'aria-labelledby': 'columns-legend' },
    h('p', { class: 'legend', id: 'columns-legend' }, 'Show these columns'));
  const columnsMenu = h('details', { class: 'menu' },
    h('summary', { 'aria-label': 'Choose columns' }, 'Columns'),
    h('div', { class: 'menu-body' }, columnsBody));
  const sortSelect = h('select', { id: 'sort-mobile', 'aria-label': 'Sort by' });
  const sortDir = h('button', { type: 'button', class: 'small', 'aria-label': 'Reverse the order' }, '↑↓');
  const newButton = h('button', { type: 'button', class: 'primary', 'aria-expanded': 'false', 'aria-controls': 'new-item' }, 'New item');
  const form = newItemForm();
  const thead = h('thead');
  const tbody = h('tbody');
  const table = h('table', { class: 'items', 'aria-labelledby': 'items-title', 'aria-describedby': 'items-count' }, thead, tbody);
  const emptyEl = h('p', { class: 'empty', hidden: true });
  const moreButton = h('button', { type: 'button', 'data-key': 'more' }, 'Show more');
  const moreEl = h('div', { class: 'list-foot', hidden: true }, h('span', { class: 'more-count' }), moreButton);
  moreButton.addEventListener('click', () => loadMore());
  // The next page comes by itself when the end of the table scrolls into view.
  const moreObserver = typeof IntersectionObserver === 'function'
    ? new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) loadMore(); }, { rootMargin: '400px' })
    : null;
  if (moreObserver) moreObserver.observe(moreEl);
  const noticeEl = h('p', { class: 'notice-bar', hidden: true, role: 'alert' });
  const sortHint = h('p', { class: 'hint', id: 'sort-hint', hidden: true });
  // Links whose target is deleted or missing (`lansync check --links`), read again when items change.
  const brokenEl = h('div', { class: 'notice-bar', hidden: true, 'data-scope': 'broken-links' });
  let brokenTimer = null;
  async function loadBroken() {
    try {
      const broken = await api('GET', '/v1/links/broken');
      brokenEl.hidden = broken.length === 0;
      const title = (id) => { const it = store.items.get(id); if (!it) wantItem(id); return it ? itemTitle(it) : shortId(id); };
      fill(brokenEl, broken.length ? [
        h('p', null, `${broken.length} link${broken.length === 1 ? ' points' : 's point'} at a deleted or missing item:`),
        h('ul', null, broken.slice(0, 50).map((b) => h('li', null,
          h('a', { href: `#/item/${encodeURIComponent(b.id)}` }, title(b.id)), ` · ${b.field} → `,
          b.state === 'deleted' ? [h('a', { href: `#/item/${encodeURIComponent(b.target)}` }, title(b.target)), ' (deleted)'] : `${shortId(b.target)} (missing)`))),
        broken.length > 50 ? h('p', null, `…and ${broken.length - 50} more: ‘lansync check --links’ lists them all.`) : null] : null);
    } catch {
      brokenEl.hidden = true;
    }
  }

  // Changing the items shown (the type filter and the search pick them): one request, one
  // transaction on the node, all or none, as 'lansync set --where' does. Asks once before it acts.
  const bulkButton = h('button', { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'bulk-edit', 'data-key': 'bulk' }, 'Change shown…');
  const bulkName = h('input', { type: 'text', id: 'bulk-name', autocomplete: 'off' });
  const bulkValue = h('input', { type: 'text', id: 'bulk-value', autocomplete: 'off' });
  const bulkError = h('p', { class: 'error-text', role: 'alert' });
  const bulkSummary = h('p', { class: 'hint', id: 'bulk-summary' });
  const bulkConfirm = h('div', { class: 'row', hidden: true });
  const bulkPanel = h('div', { class: 'panel add-field', id: 'bulk-edit', hidden: true, role: 'group', 'aria-labelledby': 'bulk-title' },
    h('h3', { id: 'bulk-title' }, 'Change the items shown'),
    bulkSummary,
    h('div', { class: 'row' },
      h('label', { class: 'stack', for: 'bulk-name' }, h('span', { class: 'field-label' }, 'Field name'), bulkName),
      h('label', { class: 'stack', for: 'bulk-value' }, h('span', { class: 'field-label' }, 'Value'), bulkValue),
      h('button', { type: 'button', 'data-key': 'bulk-set', onclick: () => armBulk('set') }, 'Set on all'),
      h('button', { type: 'button', class: 'danger', 'data-key': 'bulk-delete', onclick: () => armBulk('delete') }, 'Delete all')),
    bulkConfirm,
    bulkError);
  bulkButton.addEventListener('click', () => {
    bulkPanel.hidden = !bulkPanel.hidden;
    bulkButton.setAttribute('aria-expanded', String(!bulkPanel.hidden));
    bulkConfirm.hidden = true;
    bulkError.textContent = '';
    renderBulkSummary();
    if (!bulkPanel.hidden) bulkName.focus();
  });

  function bulkTargets() {
    return shownItems().filter((it) => !it.deleted);
  }

  function renderBulkSummary() {
    const n = bulkTargets().length;
    bulkSummary.textContent = `${n} item${n === 1 ? '' : 's'} shown (deleted ones left out)`
      + (next ? '; more match below: “Show more” adds them, or narrow them with the type and the search.' : ': narrow them with the type and the search first.');
  }

  function armBulk(kind) {
    bulkError.textContent = '';
    const targets = bulkTargets();
    if (!targets.length) { bulkError.textContent = 'No item is shown.'; return; }
    let body;
    let what;
    if (kind === 'set') {
      const name = bulkName.value.trim();
      if (!name) { bulkError.textContent = 'Name the field first.'; bulkName.focus(); return; }
      const read = readInput(bulkValue.value, false);
      if (read.error) { bulkError.textContent = read.error; bulkValue.focus(); return; }
      body = { patch: { set: { [name]: read.value } } };
      what = `Set ${name} on ${targets.length} item${targets.length === 1 ? '' : 's'}`;
    } else {
      body = { delete: true };
      what = `Delete ${targets.length} item${targets.length === 1 ? '' : 's'}`;
    }
    const ids = targets.map((it) => it.id);
    const yes = h('button', { type: 'button', class: kind === 'delete' ? 'danger primary' : 'primary', 'data-key': 'bulk-yes' }, `${what}`);
    const no = h('button', { type: 'button', class: 'quiet', onclick: () => { bulkConfirm.hidden = true; } }, 'Cancel');
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      try {
        const result = await api('POST', '/v1/items/batch', { ids, ...body });
        bulkConfirm.hidden = true;
        toast(`${kind === 'delete' ? 'Deleted' : 'Changed'} ${result.changed} item${result.changed === 1 ? '' : 's'}.`);
        await reload(true);
        renderBulkSummary();
      } catch (e) {
        bulkError.textContent = e.message;
        yes.disabled = false;
      }
    });
    fill(bulkConfirm, h('span', null, `${what}? `), yes, no);
    bulkConfirm.hidden = false;
    yes.focus();
  }

  add(el, [
    h('div', { class: 'view-head' },
      h('div', null, h('h1', { id: 'items-title', tabindex: '-1' }, 'Items'), countEl),
      newButton),
    form.el,
    noticeEl,
    brokenEl,
    h('div', { class: 'toolbar', role: 'search' },
      h('label', { class: 'stack', for: 'type-filter' }, h('span', { class: 'field-label' }, 'Type'), typeSelect),
      h('label', { class: 'stack grow', for: 'item-search' }, h('span', { class: 'field-label' }, 'Search'), searchInput),
      h('label', { for: 'show-deleted' }, deletedBox, 'Show deleted'),
      h('div', { class: 'stack sort-mobile' }, h('span', { class: 'field-label' }, 'Sort'),
        h('div', { class: 'edit-row' }, sortSelect, sortDir)),
      h('div', { class: 'end' }, bulkButton, columnsMenu)),
    sortHint,
    bulkPanel,
    h('div', { class: 'panel table-wrap' }, table, emptyEl),
    moreEl,
  ]);

  /** The question the view asks the node, for a page after `after` of `limit` items. */
  function question(after, limit) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (prefs.type) q.set('type', prefs.type);
    if (prefs.showDeleted) q.set('deleted', 'true');
    if (search.trim()) q.set('q', search.trim());
    if (prefs.sort.key !== '@id') q.set('sort', `${prefs.sort.dir < 0 ? '-' : ''}${prefs.sort.key}`);
    if (after) q.set('after', after);
    return `/v1/items?${q}`;
  }

  /** Asks again from the top, for as many items as are shown (at least a page, at most MAX_RELOAD). */
  async function reload(again = false) {
    const mine = generation += 1;
    const want = again ? Math.min(Math.max(shown.length, PAGE_SIZE), MAX_RELOAD) : PAGE_SIZE;
    loading = true;
    try {
      const page = await api('GET', question(null, want));
      if (mine !== generation) return;
      const changed = [];
      for (const item of page.items) if (cacheItem(item)) changed.push(item.id);
      shown = page.items.map((it) => it.id);
      store.viewing = new Set(shown);
      next = page.next;
      loaded = true;
      loadError = null;
      pruneItems(new Set(shown));
      loading = false;
      renderAll(again ? changed : null);
    } catch (e) {
      if (mine !== generation) return;
      loading = false;
      loadError = e.message;
      renderBody();
    }
  }

  async function loadMore() {
    if (!next || loading || !loaded) return;
    const mine = generation;
    loading = true;
    try {
      const page = await api('GET', question(next, PAGE_SIZE));
      if (mine !== generation) return;
      const have = new Set(shown);
      for (const item of page.items) {
        cacheItem(item);
        if (!have.has(item.id)) { shown.push(item.id); store.viewing.add(item.id); }
      }
      next = page.next;
      loading = false;
      computeFields();
      renderColumnsMenu();
      renderBody();
    } catch (e) {
      if (mine !== generation) return;
      loading = false;
      toast(e.message, { error: true });
    }
  }

  function scheduleReload(delay = 150) {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => reload(true), delay);
  }

  // An item deleted or retyped here leaves at once; the node's answer follows with the feed.
  function shownItems() {
    return shown.map((id) => store.items.get(id))
      .filter((it) => it && (prefs.showDeleted || !it.deleted) && (!prefs.type || it.type === prefs.type));
  }

  function computeFields() {
    const counts = new Map();
    for (const item of shownItems()) {
      for (const f of Object.keys(item.fields)) counts.set(f, (counts.get(f) || 0) + 1);
    }
    fieldNames = [...counts.keys()].sort((a, b) => collator.compare(a, b));
    const chosen = prefs.columns[prefs.type || '*'];
    if (Array.isArray(chosen)) {
      columns = chosen.slice();
    } else {
      const byUse = [...counts.entries()].sort((a, b) => b[1] - a[1] || collator.compare(a[0], b[0])).map((e) => e[0]);
      const first = ['title', 'name'].filter((f) => counts.has(f));
      const rest = byUse.filter((f) => !first.includes(f));
      columns = [...(prefs.type ? [] : ['@type']), ...first, ...rest].slice(0, prefs.type ? 5 : 6);
      columns.push('@sync');
    }
    for (const c of columns) if (!c.startsWith('@') && !fieldNames.includes(c)) fieldNames.push(c);
    if (prefs.sort.key !== '@id' && !fieldNames.includes(prefs.sort.key)) fieldNames.push(prefs.sort.key);
  }

  function renderTypes() {
    const counts = new Map();
    for (const t of (store.summary && store.summary.types) || []) {
      const n = t.items + (prefs.showDeleted ? t.deleted : 0);
      if (n > 0) counts.set(t.type, n);
    }
    if (prefs.type && !counts.has(prefs.type)) counts.set(prefs.type, 0);
    const types = [...counts.keys()].sort((a, b) => collator.compare(a, b));
    // Refilled only when it changes: refilling would close the list a user has open.
    const signature = jsonText([types.map((t) => [t, counts.get(t)]), prefs.type]);
    if (signature === typesSignature) return;
    typesSignature = signature;
    keepFocus(() => {
      fill(typeSelect,
        h('option', { value: '' }, 'All types'),
        types.map((t) => h('option', { value: t }, `${t} (${counts.get(t)})`)));
      typeSelect.value = prefs.type;
    });
    form.setTypes(types, prefs.type);
  }

  function renderColumnsMenu() {
    const options = ['@type', ...fieldNames, '@sync'];
    fill(columnsBody, columnsBody.firstElementChild, options.map((key) => {
      const id = uid('col');
      const box = h('input', { type: 'checkbox', id, checked: columns.includes(key), 'data-key': `col:${key}` });
      box.addEventListener('change', () => {
        // Keep the order the columns have; a new one goes last (before Sync), Type first.
        const next_ = columns.filter((k) => k !== key);
        if (box.checked) {
          if (key === '@type') next_.unshift(key);
          else if (key !== '@sync' && next_.includes('@sync')) next_.splice(next_.indexOf('@sync'), 0, key);
          else next_.push(key);
        }
        columns = next_;
        prefs.columns[prefs.type || '*'] = columns;
        savePrefs(prefs);
        rows.clear();
        renderAll();
      });
      return h('label', { for: id }, box, columnName(key));
    }));
  }

  // The node orders by the item's id or by a field (by kind, then value: Docs/API.md); Type is
  // the filter's job, and Sync is this node's own view of each item, so neither is an order.
  function sortable(key) {
    return key === '@id' || !key.startsWith('@');
  }

  function renderHead() {
    const { key, dir } = prefs.sort;
    const th = (k, label) => {
      const active = key === k;
      if (!sortable(k)) return h('th', { scope: 'col' }, h('span', { class: 'th-label' }, label));
      const nextDir = k === '@id' ? 1 : active ? -dir : 1;
      return h('th', { scope: 'col', 'aria-sort': active ? (dir > 0 ? 'ascending' : 'descending') : null },
        h('button', {
          type: 'button', 'data-key': `sort:${k}`,
          'aria-label': `${label}: sort ${nextDir > 0 ? 'ascending' : 'descending'}`,
          onclick: () => setSort(k, nextDir),
        }, label, ' ', h('span', { class: 'sort-arrow', 'aria-hidden': 'true' }, active ? (dir > 0 ? '▲' : '▼') : '')));
    };
    keepFocus(() => fill(thead, h('tr', null,
      th('@id', 'Item'),
      columns.map((c) => th(c, columnName(c))),
      h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))));
    const options = ['@id', ...columns.filter(sortable)];
    if (!options.includes(key)) options.push(key);
    keepFocus(() => {
      fill(sortSelect, options.map((k) => h('option', { value: k }, columnName(k))));
      sortSelect.value = key;
    });
    sortDir.disabled = key === '@id';
    const indexed = (store.summary && store.summary.indexed) || [];
    const total = store.summary ? store.summary.items + store.summary.deleted : 0;
    sortHint.hidden = key === '@id' || indexed.includes(key) || total < 10000;
    sortHint.textContent = `Sorting by ${key} reads every item’s ${key} on the node (${total.toLocaleString()} items): ‘lansync index ${key}’ there makes it quick.`;
  }

  function setSort(k, dir) {
    prefs.sort = { key: k, dir: k === '@id' ? 1 : dir };
    savePrefs(prefs);
    renderHead();
    reload();
    announce(`Sorted by ${columnName(k)}, ${prefs.sort.dir > 0 ? 'ascending' : 'descending'}.`);
  }

  function buildRow(item) {
    const title = itemTitle(item);
    const cells = [];
    const tr = h('tr', { 'data-scope': item.id, 'data-id': item.id, class: item.deleted ? 'is-deleted' : null });
    tr.append(h('td', { 'data-label': 'Item' }, h('div', null,
      h('a', {
        class: 'item-link', href: `#/item/${encodeURIComponent(item.id)}`, 'data-key': 'open', title: item.id,
        'aria-label': `Open ${title}${item.deleted ? ' (deleted)' : ''}`,
      }, shortId(item.id)),
      item.deleted ? h('span', null, ' ', h('span', { class: 'badge deleted' }, 'deleted')) : null)));
    for (const c of columns) {
      if (c === '@type') {
        tr.append(h('td', { 'data-label': 'Type' }, item.type));
      } else if (c === '@sync') {
        tr.append(h('td', { 'data-label': 'Sync', class: 'sync-cell' }, syncBadge(item.sync)));
      } else {
        const cell = new FieldCell(item.id, c, { onClose: () => renderRowLater(item.id) });
        cells.push(cell);
        tr.append(h('td', { 'data-label': c, 'data-field': c }, cell.el));
      }
    }
    tr.append(h('td', { class: 'actions' }, item.deleted
      ? h('button', { type: 'button', class: 'small', 'data-key': 'restore', 'aria-label': `Restore ${title}`, onclick: () => restoreItem(item) }, 'Restore')
      : h('button', { type: 'button', class: 'small danger', 'data-key': 'delete', 'aria-label': `Delete ${title}`, onclick: () => deleteItem(item) }, 'Delete')));
    return { tr, item, cells };
  }

  function rowFor(item) {
    let row = rows.get(item.id);
    if (row && row.item !== item) {
      if (row.cells.some((c) => c.editing)) {
        row.cells.forEach((c) => c.refresh());
        row.stale = true;
        return row;
      }
      row = null;
    }
    if (!row) {
      row = buildRow(item);
      rows.set(item.id, row);
    }
    return row;
  }

  function renderRowLater(id) {
    setTimeout(() => {
      const row = rows.get(id);
      if (row && row.stale && !row.cells.some((c) => c.editing)) {
        rows.delete(id);
        renderBody();
      }
    }, 0);
  }

  function renderBody(flashIds) {
    const list = shownItems();
    const wanted = list.map((it) => rowFor(it).tr);
    moreEl.hidden = !next;
    moreEl.querySelector('.more-count').textContent = `Showing the first ${list.length.toLocaleString()}.`;
    keepFocus(() => {
      // Move rows only where the order changed, so a focused row is not taken out needlessly.
      let child = tbody.firstElementChild;
      for (const tr of wanted) {
        if (child === tr) { child = child.nextElementSibling; continue; }
        tbody.insertBefore(tr, child);
      }
      while (child) { const after = child.nextElementSibling; child.remove(); child = after; }
    });
    for (const [id, row] of rows) if (!row.tr.isConnected && !shown.includes(id)) rows.delete(id);
    if (!bulkPanel.hidden) renderBulkSummary();
    if (flashIds) {
      for (const id of flashIds) {
        const row = rows.get(id);
        if (row && row.tr.isConnected) {
          row.tr.classList.remove('flash');
          void row.tr.offsetWidth;
          row.tr.classList.add('flash');
        }
      }
    }
    const summary = store.summary;
    const total = summary ? summary.items : null;
    const s = (n) => (n === 1 ? '' : 's');
    let text = '';
    if (!loaded) text = loadError ? '' : 'Loading…';
    else if (total === null) text = `${list.length}${next ? '+' : ''} shown`;
    else if (!prefs.type && !search.trim() && !prefs.showDeleted) text = `${total.toLocaleString()} item${s(total)}`;
    else if (!search.trim()) {
      const t = prefs.type ? summary.types.find((x) => x.type === prefs.type) : null;
      const live = prefs.type ? (t ? t.items : 0) : total;
      const deleted = prefs.type ? (t ? t.deleted : 0) : summary.deleted;
      const n = live + (prefs.showDeleted ? deleted : 0);
      text = `${n.toLocaleString()} shown of ${total.toLocaleString()} item${s(total)}${prefs.showDeleted ? ` and ${summary.deleted.toLocaleString()} deleted` : ''}`;
    } else {
      text = `${list.length.toLocaleString()}${next ? '+' : ''} found of ${total.toLocaleString()} item${s(total)}`;
    }
    countEl.textContent = text;
    emptyEl.hidden = list.length > 0 || !loaded;
    table.hidden = list.length === 0;
    emptyEl.textContent = summary && summary.items + summary.deleted === 0
      ? 'No items yet. “New item” adds one; items added on any node of the cluster show up here as they arrive.'
      : 'No item matches. Change the type, the search or “Show deleted”.';
    noticeEl.hidden = !loadError;
    noticeEl.textContent = loadError || '';
  }

  function renderAll(flashIds) {
    computeFields();
    renderTypes();
    renderColumnsMenu();
    renderHead();
    renderBody(flashIds);
  }

  function changeQuestion() {
    rows.clear();
    reload();
  }

  typeSelect.addEventListener('change', () => {
    prefs.type = typeSelect.value;
    savePrefs(prefs);
    changeQuestion();
  });
  let searchTimer = null;
  searchInput.addEventListener('input', () => {
    search = searchInput.value;
    clearTimeout(searchTimer);
    searchTimer = setTimeout(changeQuestion, 120);
  });
  searchInput.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && searchInput.value) { searchInput.value = ''; search = ''; changeQuestion(); }
  });
  deletedBox.addEventListener('change', () => {
    prefs.showDeleted = deletedBox.checked;
    savePrefs(prefs);
    renderTypes();
    changeQuestion();
  });
  sortSelect.addEventListener('change', () => setSort(sortSelect.value, 1));
  sortDir.addEventListener('click', () => setSort(prefs.sort.key, -prefs.sort.dir));
  columnsMenu.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && columnsMenu.open) {
      columnsMenu.open = false;
      columnsMenu.querySelector('summary').focus();
    }
  });
  const outside = (ev) => { if (columnsMenu.open && !columnsMenu.contains(ev.target)) columnsMenu.open = false; };
  document.addEventListener('click', outside);
  newButton.addEventListener('click', () => {
    if (form.el.hidden) form.open(); else form.close();
  });
  form.onToggle = (open) => newButton.setAttribute('aria-expanded', String(open));
  form.onCreated = (item) => {
    form.close();
    newButton.focus();
    reload(true).then(() => renderBody([item.id]));
  };

  const keys = (ev) => {
    if (ev.key !== '/' || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    ev.preventDefault();
    searchInput.focus();
  };
  document.addEventListener('keydown', keys);

  unsubscribe = subscribe((what, ids) => {
    if (what === 'summary') { renderTypes(); renderHead(); renderBody(); return; }
    if (what === 'changed') { scheduleReload(); return; }
    if (what !== 'items') return;
    clearTimeout(brokenTimer);
    brokenTimer = setTimeout(loadBroken, 300);
    if (ids === null) { rows.clear(); scheduleReload(0); return; }
    const before = jsonText([fieldNames, columns]);
    computeFields();
    if (jsonText([fieldNames, columns]) !== before) {
      rows.clear();
      renderColumnsMenu();
      renderHead();
    }
    // A link's target read meanwhile changes how rows that point at it read.
    if (ids.some((id) => !shown.includes(id))) rows.clear();
    renderBody(ids.filter((id) => shown.includes(id)));
  });

  setTitle('Items');
  renderAll();
  reload();
  if (!store.summary) loadSummary();
  loadBroken();

  return {
    el,
    destroy() {
      unsubscribe();
      clearTimeout(brokenTimer);
      clearTimeout(reloadTimer);
      clearTimeout(searchTimer);
      generation += 1;
      store.viewing = new Set();
      if (moreObserver) moreObserver.disconnect();
      document.removeEventListener('click', outside);
      document.removeEventListener('keydown', keys);
    },
  };
}

function newItemForm() {
  const el = h('form', { class: 'panel new-item', id: 'new-item', hidden: true, 'aria-labelledby': 'new-item-title', novalidate: true });
  const typeInput = h('input', { type: 'text', id: 'new-type', list: 'known-types', placeholder: 'item', autocomplete: 'off' });
  const typesList = h('datalist', { id: 'known-types' });
  const rowsEl = h('div', { class: 'rows' });
  const errorEl = h('p', { class: 'error-text', role: 'alert', id: 'new-item-error' });
  const createButton = h('button', { type: 'submit', class: 'primary' }, 'Create');
  let n = 0;
  const api_ = { el, onToggle: null, onCreated: null };

  function addRow(name = '', value = '') {
    n += 1;
    const i = n;
    const nameInput = h('input', { type: 'text', id: `new-field-${i}`, value: name, autocomplete: 'off', class: 'field-name' });
    const valueInput = h('input', { type: 'text', id: `new-value-${i}`, value, autocomplete: 'off', class: 'field-value' });
    const row = h('div', { class: 'row' },
      h('label', { class: 'stack', for: `new-field-${i}` }, h('span', { class: 'field-label' }, `Field name ${i}`), nameInput),
      h('label', { class: 'stack', for: `new-value-${i}` }, h('span', { class: 'field-label' }, `Value ${i}`), valueInput),
      h('button', {
        type: 'button', class: 'small quiet', 'aria-label': `Remove field ${i}`,
        onclick: () => { row.remove(); const first = rowsEl.querySelector('input'); (first || addButton).focus(); },
      }, 'Remove'));
    rowsEl.append(row);
    return nameInput;
  }

  const addButton = h('button', { type: 'button', class: 'small', onclick: () => addRow().focus() }, 'Add a field');

  add(el, [
    h('h2', { id: 'new-item-title' }, 'New item'),
    h('label', { class: 'stack', for: 'new-type' }, h('span', { class: 'field-label' }, 'Type'), typeInput),
    typesList,
    rowsEl,
    addButton,
    h('p', { class: 'hint' }, 'A value is read as the CLI reads it: JSON when it is valid JSON (2, true, null, ["a", "b"]), text otherwise.'),
    errorEl,
    h('div', { class: 'form-actions' }, createButton,
      h('button', { type: 'button', onclick: () => api_.close(true) }, 'Cancel')),
  ]);

  el.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') { ev.preventDefault(); api_.close(true); }
  });

  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    errorEl.textContent = '';
    const fields = {};
    for (const row of rowsEl.children) {
      const name = row.querySelector('.field-name').value.trim();
      const text = row.querySelector('.field-value').value;
      if (!name && !text) continue;
      if (!name) { errorEl.textContent = `Give the value “${shorten(text, 30)}” a field name.`; row.querySelector('.field-name').focus(); return; }
      if (Object.prototype.hasOwnProperty.call(fields, name)) { errorEl.textContent = `The field ${name} is named twice.`; return; }
      const read = readInput(text, false);
      if (read.error) { errorEl.textContent = `${name}: ${read.error}`; row.querySelector('.field-value').focus(); return; }
      fields[name] = read.value;
    }
    const body = { fields };
    const type = typeInput.value.trim();
    if (type) body.type = type;
    createButton.disabled = true;
    try {
      const item = await api('POST', '/v1/items', body);
      putItem(item);
      toast(`Created “${shorten(itemTitle(item), 40)}”.`);
      if (api_.onCreated) api_.onCreated(item);
    } catch (e) {
      errorEl.textContent = e.message;
    } finally {
      createButton.disabled = false;
    }
  });

  api_.setTypes = (types, current) => {
    fill(typesList, types.map((t) => h('option', { value: t })));
    api_.defaultType = current || '';
  };
  api_.open = () => {
    fill(rowsEl);
    n = 0;
    typeInput.value = api_.defaultType || '';
    addRow('title');
    addRow();
    errorEl.textContent = '';
    el.hidden = false;
    if (api_.onToggle) api_.onToggle(true);
    (typeInput.value ? rowsEl.querySelector('.field-value') : typeInput).focus();
  };
  api_.close = (focusButton) => {
    el.hidden = true;
    if (api_.onToggle) api_.onToggle(false);
    if (focusButton) {
      const b = document.querySelector('[aria-controls="new-item"]');
      if (b) b.focus();
    }
  };
  return api_;
}

// ---------------------------------------------------------------------------------------------
// One item: its fields (editable), per-field history as a timeline, "bring this value back".

function describeWrite(write) {
  if (write && Object.prototype.hasOwnProperty.call(write, 'set')) {
    return { what: ['set to ', renderValue(write.set)], value: write.set, has: true };
  }
  if (write && write.list) {
    const l = write.list;
    const added = l.added || [];
    const removed = l.removed || [];
    if (l.replaced) {
      return { what: ['set the list to ', renderValue(added)], value: added, has: true };
    }
    const parts = [];
    if (added.length) parts.push('added ', h('span', { class: 'chips' }, added.map((e) => h('span', { class: 'chip' }, valueText(e)))));
    if (removed.length) parts.push(added.length ? '; removed ' : 'removed ', h('span', { class: 'chips' }, removed.map((e) => h('span', { class: 'chip' }, valueText(e)))));
    if (!parts.length) parts.push('changed nothing in the list');
    return { what: parts, has: false };
  }
  if (write && write.unset === true) {
    return { what: ['removed the field'], has: false };
  }
  if (write && write.overrule) {
    const o = write.overrule;
    const n = (o.rejected || []).length;
    return {
      what: ['the relay kept ', renderValue(o.kept), ` and refused ${n} write${n === 1 ? '' : 's'}`, o.reason ? `: ${o.reason}` : ''],
      has: false,
    };
  }
  return { what: [jsonText(write)], has: false };
}

function itemView(id) {
  const el = h('section', { 'aria-labelledby': 'item-title' });
  const head = h('div');
  const fieldsBody = h('tbody');
  const histEl = h('div');
  const fieldRows = new Map();    // field -> { tr, cell }
  let history = null;
  let lastChanges = new Map();
  let historyError = null;
  let historyTimer = null;
  let missing = null;

  const addName = h('input', { type: 'text', id: 'add-field-name', autocomplete: 'off' });
  const addValue = h('input', { type: 'text', id: 'add-field-value', autocomplete: 'off' });
  const addError = h('p', { class: 'error-text', role: 'alert' });
  const addForm = h('form', { class: 'panel add-field', novalidate: true, 'aria-labelledby': 'add-field-title' },
    h('h3', { id: 'add-field-title' }, 'Add a field'),
    h('div', { class: 'row' },
      h('label', { class: 'stack', for: 'add-field-name' }, h('span', { class: 'field-label' }, 'Field name'), addName),
      h('label', { class: 'stack', for: 'add-field-value' }, h('span', { class: 'field-label' }, 'Value'), addValue),
      h('button', { type: 'submit' }, 'Add')),
    h('p', { class: 'hint' }, 'Read as the CLI reads it: JSON when valid (2, true, ["a", "b"]), text otherwise. A field that exists gets the new value.'),
    addError);
  addForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    addError.textContent = '';
    const name = addName.value.trim();
    if (!name) { addError.textContent = 'Name the field first.'; addName.focus(); return; }
    const read = readInput(addValue.value, false);
    if (read.error) { addError.textContent = read.error; addValue.focus(); return; }
    try {
      putItem(await api('PATCH', itemPath(id), { set: { [name]: read.value } }));
      announce(`Set ${name}.`);
      addName.value = '';
      addValue.value = '';
      addName.focus();
    } catch (e) {
      addError.textContent = e.message;
    }
  });

  // Changing the type: an input kept across re-renders (a change arriving meanwhile must not
  // take away what is being typed), shown in place of the type while `retyping`.
  let retyping = false;
  const retypeInput = h('input', { type: 'text', id: 'retype-input', 'data-key': 'retype-input', autocomplete: 'off', 'aria-label': 'New type' });
  const retypeError = h('span', { class: 'error-text', role: 'alert' });
  function stopRetyping() {
    retyping = false;
    retypeError.textContent = '';
    const item = store.items.get(id);
    if (item) renderHead(item);
  }
  async function saveType() {
    const type = retypeInput.value.trim();
    if (!type) { retypeError.textContent = 'Give the new type.'; retypeInput.focus(); return; }
    try {
      const item = await api('PATCH', itemPath(id), { type });
      retyping = false;
      retypeError.textContent = '';
      putItem(item);
      announce(`Changed the type to ${type}.`);
      const button = head.querySelector('[data-key="retype"]');
      if (button) button.focus();
    } catch (e) {
      retypeError.textContent = e.message;
    }
  }
  retypeInput.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); saveType(); }
    else if (ev.key === 'Escape') { ev.preventDefault(); stopRetyping(); }
  });
  function typeEntry(item) {
    if (retyping && !item.deleted) {
      return h('li', { class: 'retype' }, h('label', { for: 'retype-input' }, 'type '), retypeInput,
        h('button', { type: 'button', class: 'small primary', 'data-key': 'retype-save', onclick: saveType }, 'Save'),
        h('button', { type: 'button', class: 'small quiet', onclick: stopRetyping }, 'Cancel'),
        retypeError);
    }
    return h('li', null, 'type ', h('strong', null, item.type), item.deleted ? null : h('button', {
      type: 'button', class: 'small quiet', 'data-key': 'retype', 'aria-label': `Change the type (${item.type})`,
      onclick: () => {
        retyping = true;
        retypeInput.value = item.type;
        renderHead(item);
        retypeInput.focus();
        retypeInput.select();
      },
    }, 'Change'));
  }

  // The items that link here (`lansync list --links-to`), read again when any item changes.
  const linkedEl = h('div', { 'data-scope': 'linked-from' });
  let linkedTimer = null;
  async function loadLinked() {
    try {
      const page = await api('GET', `/v1/items?links_to=${encodeURIComponent(id)}`);
      fill(linkedEl, page.items.length
        ? [h('h2', { id: 'linked-title' }, 'Linked from'),
          h('ul', { class: 'linked', 'aria-labelledby': 'linked-title' }, page.items.map((it) => h('li', null,
            h('a', { href: `#/item/${encodeURIComponent(it.id)}` }, itemTitle(it)),
            h('span', { class: 'muted' }, ` · ${Object.keys(it.fields).filter((f) => jsonText(it.fields[f]).includes(jsonText({ ref: id }))).join(', ')}`))))]
        : null);
    } catch {
      fill(linkedEl);
    }
  }

  add(el, [
    h('a', { class: 'back', href: '#/items' }, '← All items'),
    head,
    h('h2', null, 'Fields'),
    h('div', { class: 'panel' }, h('table', { class: 'fields', 'aria-label': 'Fields' }, fieldsBody)),
    linkedEl,
    addForm,
    h('h2', { id: 'history-title' }, 'History'),
    h('p', { class: 'sub' }, 'Every kept version of each field, newest first. Bringing a value back is a new edit: it syncs like any other, and the history keeps everything.'),
    histEl,
  ]);

  function fieldOrder(item) {
    const names = Object.keys(item.fields).sort((a, b) => collator.compare(a, b));
    const first = ['title', 'name'].filter((f) => names.includes(f));
    return [...first, ...names.filter((f) => !first.includes(f))];
  }

  function renderHead(item) {
    const title = itemTitle(item);
    setTitle(title);
    keepFocus(() => fill(head, 
      h('div', { class: 'item-head' },
        h('div', null,
          h('h1', { id: 'item-title', tabindex: '-1' }, title),
          h('ul', { class: 'meta' },
            typeEntry(item),
            h('li', null, 'id ', h('code', null, item.id)),
            h('li', null, 'sync ', syncBadge(item.sync)),
            item.deleted ? h('li', null, h('span', { class: 'badge deleted' }, 'deleted')) : null)),
        h('div', null, item.deleted
          ? h('button', { type: 'button', 'data-key': 'restore', onclick: () => restoreItem(item) }, 'Restore')
          : h('button', { type: 'button', class: 'danger', 'data-key': 'delete', onclick: () => deleteItem(item) }, 'Delete'))),
      item.deleted
        ? h('p', { class: 'notice-bar' }, 'This item is deleted. Restore it to edit it; it comes back with every edit it received meanwhile.')
        : null,
      item.conflicts.length
        ? h('p', { class: 'notice-bar' }, `In conflict: ${item.conflicts.join(', ')}. `, h('a', { href: '#/conflicts' }, 'Settle it on the conflicts page'), '.')
        : null));
  }

  function renderFields(item) {
    const wanted = [];
    for (const f of fieldOrder(item)) {
      let row = fieldRows.get(f);
      if (row && row.cell.editing) {
        row.cell.refresh();
      } else if (row && row.deleted === item.deleted) {
        row.cell.render();
      } else {
        const cell = new FieldCell(id, f);
        const tr = h('tr', { 'data-scope': `field:${f}`, 'data-field': f },
          h('th', { scope: 'row' }, f),
          h('td', null, cell.el),
          h('td', { class: 'hist-link' }, h('button', {
            type: 'button', class: 'small quiet', 'data-key': 'hist', 'aria-label': `History of ${f}`,
            onclick: () => {
              const target = document.getElementById(`hist-${cssId(f)}`);
              if (target) { target.scrollIntoView({ block: 'start' }); target.focus({ preventScroll: true }); }
            },
          }, 'History'), item.deleted ? null : h('button', {
            type: 'button', class: 'small quiet danger', 'data-key': 'unset', 'aria-label': `Remove ${f}`,
            onclick: () => removeField(f),
          }, 'Remove')));
        row = { tr, cell, deleted: item.deleted };
        fieldRows.set(f, row);
      }
      wanted.push(row.tr);
    }
    keepFocus(() => fill(fieldsBody, ...wanted));
    addForm.hidden = item.deleted;
  }

  function renderHistory() {
    const item = store.items.get(id);
    if (historyError) { fill(histEl, h('p', { class: 'notice-bar' }, historyError)); return; }
    if (!history || !item) { fill(histEl, h('p', { class: 'loading' }, 'Loading…')); return; }
    const byField = new Map();
    for (const entry of history) {
      if (!byField.has(entry.field)) byField.set(entry.field, []);
      byField.get(entry.field).push(entry);
    }
    const order = [...fieldOrder(item).filter((f) => byField.has(f)), ...[...byField.keys()].filter((f) => !(f in item.fields))];
    if (!order.length) {
      fill(histEl, h('p', { class: 'empty' }, 'No history kept for this item.'));
      return;
    }
    keepFocus(() => fill(histEl, ...order.map((f) => {
      const entries = byField.get(f);
      // The type's history is the item's own _type field: shown as "type", brought back as one.
      const current = f === '_type' ? item.type : item.fields[f];
      const label = f === '_type' ? 'type' : f;
      return h('section', { class: 'panel field-hist', 'data-scope': `hist:${f}`, 'aria-labelledby': `hist-${cssId(f)}` },
        h('h3', { id: `hist-${cssId(f)}`, tabindex: '-1' }, label),
        fieldLane(entries, label, item.conflicts.includes(f), lastChanges.get(f)),
        h('ol', { class: 'timeline' }, entries.map((e, i) => {
          const d = describeWrite(e.write);
          const canRevert = d.has && !sameValue(d.value, current) && !item.deleted;
          return h('li', { class: e.live ? 'is-live' : null },
            h('div', { class: 'when' },
              timeEl(e.time),
              h('span', null, 'by ', h('strong', null, writerName(e.writer, e.node))),
              e.signed ? null : h('span', { class: 'badge', title: 'Not signed by its writer, or passed on without its signature: who wrote it is what its writer id says, unchecked' }, 'unverified'),
              e.live ? h('span', { class: 'badge synced' }, item.conflicts.includes(f) ? 'live, in conflict' : 'live') : null),
            h('div', { class: 'what' }, d.what),
            canRevert
              ? h('button', {
                type: 'button', class: 'small', 'data-key': `rev:${e.node}:${e.counter}`,
                'aria-label': `Bring back ${label} = ${shorten(valueText(d.value), 60)}`,
                onclick: (ev) => bringBack(f, d.value, ev.currentTarget),
              }, 'Bring this value back')
              : null,
          );
        })));
    })));
  }

  // Removing a field is an edit like any other (`lansync unset`): the toast's Undo sets the
  // value back, and the history keeps it either way.
  async function removeField(field) {
    const before = store.items.get(id);
    const value = before ? before.fields[field] : undefined;
    try {
      putItem(await api('PATCH', itemPath(id), { unset: [field] }));
      toast(`Removed ${field}.`, value === undefined ? {} : {
        action: {
          label: 'Undo',
          run: async () => {
            try { putItem(await api('PATCH', itemPath(id), { set: { [field]: value } })); } catch (e) { toast(e.message, { error: true }); }
          },
        },
      });
    } catch (e) {
      toast(e.message, { error: true });
    }
  }

  async function bringBack(field, value, button) {
    button.disabled = true;
    try {
      const body = field === '_type' ? { type: value } : { set: { [field]: value } };
      putItem(await api('PATCH', itemPath(id), body));
      toast(`${field === '_type' ? 'The type' : field} is ${shorten(valueText(value), 50)} again.`);
    } catch (e) {
      toast(e.message, { error: true });
    } finally {
      button.disabled = false;
    }
  }

  async function loadHistory() {
    try {
      history = await api('GET', `${itemPath(id)}/history`);
      // Each field's latest change says whether a conflict is open on it since then, or when its
      // last one was settled (the feed keeps a field's latest change).
      const page = await api('GET', `/v1/changes?item=${encodeURIComponent(id)}&limit=1000`);
      lastChanges = new Map((page.changes || []).map((c) => [c.field, c]));
      historyError = null;
    } catch (e) {
      historyError = e.message;
    }
    renderHistory();
  }

  function scheduleHistory() {
    clearTimeout(historyTimer);
    historyTimer = setTimeout(loadHistory, 120);
  }

  function render() {
    const item = store.items.get(id);
    if (!item) {
      if (missing) {
        fill(head, h('h1', { id: 'item-title', tabindex: '-1' }, 'No such item'), h('p', { class: 'notice-bar' }, missing));
        fill(fieldsBody);
        addForm.hidden = true;
        fill(histEl);
      } else {
        fill(head, h('h1', { id: 'item-title', tabindex: '-1' }, 'Loading…'));
      }
      return;
    }
    renderHead(item);
    renderFields(item);
    renderHistory();
  }

  const unsubscribe = subscribe((what, ids) => {
    if (what === 'items' && (ids === null || ids.includes(id))) {
      render();
      scheduleHistory();
    }
    if (what === 'items') {
      clearTimeout(linkedTimer);
      linkedTimer = setTimeout(loadLinked, 200);
    }
  });

  if (!store.items.has(id)) {
    api('GET', itemPath(id)).then(putItem, (e) => { missing = e.message; render(); });
  }
  render();
  loadHistory();
  loadLinked();
  return { el, destroy() { unsubscribe(); clearTimeout(historyTimer); clearTimeout(linkedTimer); } };
}

/** A field name made safe for an element id (field names may hold any character). */
function cssId(name) {
  let out = '';
  for (const ch of name) out += /[A-Za-z0-9_-]/.test(ch) ? ch : `_${ch.codePointAt(0).toString(16)}_`;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Conflicts: each one's values side by side, who wrote each and when, one click to keep one, or
// a new value.

function conflictsView() {
  const el = h('section', { 'aria-labelledby': 'conflicts-title' });
  const listEl = h('div');
  const cards = new Map();   // key -> { el, sig }
  add(el, [
    h('div', { class: 'view-head' },
      h('div', null,
        h('h1', { id: 'conflicts-title', tabindex: '-1' }, 'Conflicts'),
        h('p', { class: 'sub' }, 'Fields written on two machines that had not seen each other’s edit. Keep one value, or write a new one: the choice syncs to every node, and the other values stay in the field’s history.'))),
    listEl,
  ]);

  function card(c) {
    const item = store.items.get(c.id);
    const title = item ? itemTitle(item) : c.id.slice(0, 8);
    const key = `${c.id}\n${c.field}`;
    const headId = uid('conflict');
    const errorEl = h('p', { class: 'error-text', role: 'alert' });
    const allText = (c.values || []).every((v) => typeof v === 'string');
    const newInput = h('input', { type: 'text', id: uid('new-value'), autocomplete: 'off', 'data-key': 'new' });
    // Keeping a removal removes the field again (`lansync unset`): a write that saw every
    // version, so it settles the conflict as a resolve does.
    const resolve = async (value, button, label, removed) => {
      errorEl.textContent = '';
      button.disabled = true;
      try {
        putItem(await (removed
          ? api('PATCH', itemPath(c.id), { unset: [c.field] })
          : api('POST', `${itemPath(c.id)}/resolve`, { field: c.field, value })));
        store.conflicts = store.conflicts.filter((x) => !(x.id === c.id && x.field === c.field));
        showConflictCount();
        toast(`${c.field} of “${shorten(title, 30)}” is now ${label}.`);
        const next = cards.get(key) ? cards.get(key).el.nextElementSibling : null;
        emit('conflicts');
        const focusTarget = next && next.isConnected ? next.querySelector('button') : el.querySelector('h1');
        if (focusTarget) focusTarget.focus();
        scheduleConflicts();
      } catch (e) {
        errorEl.textContent = e.message;
        button.disabled = false;
      }
    };
    // The node sends the versions shown one first.
    const versions = (c.versions || []).map((v, i) => {
      const isShown = i === 0;
      const who = writerName(v.writer, v.node);
      const what = v.removed ? 'the removal' : shorten(valueText(v.value), 50);
      return h('div', { class: isShown ? 'version shown' : 'version', role: 'listitem' },
        h('div', { class: 'value' }, v.removed ? h('em', { class: 'muted' }, 'removed') : renderValue(v.value)),
        h('p', { class: 'who' }, 'by ', h('strong', null, who), ', ', timeEl(v.time),
          isShown ? [' ', h('span', { class: 'badge syncing' }, 'shown now')] : null),
        h('button', {
          type: 'button', class: 'primary', 'data-key': `keep:${i}`,
          'aria-label': `Keep ${what}, by ${who}`,
          onclick: (ev) => resolve(v.value, ev.currentTarget, v.removed ? 'removed' : `“${shorten(valueText(v.value), 40)}”`, v.removed),
        }, 'Keep this'));
    });
    const form = h('form', { class: 'new-value', novalidate: true },
      h('label', { class: 'stack', for: newInput.id }, h('span', { class: 'field-label' }, 'Or a new value'), newInput),
      h('button', { type: 'submit', 'data-key': 'use' }, 'Use this value'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const text = newInput.value;
      if (text.trim() === '') { errorEl.textContent = 'Type the new value first.'; newInput.focus(); return; }
      const read = readInput(text, allText);
      if (read.error) { errorEl.textContent = read.error; newInput.focus(); return; }
      resolve(read.value, form.querySelector('button'), 'the new value');
    });
    return h('article', { class: 'panel conflict', 'data-scope': key, 'data-conflict': `${c.id}/${c.field}`, 'aria-labelledby': headId },
      h('h2', { id: headId }, h('a', { href: `#/item/${encodeURIComponent(c.id)}` }, title), h('span', { class: 'muted' }, ` · ${c.field}`)),
      h('p', { class: 'sub' }, `${item ? item.type : 'item'} · ${c.versions.length} concurrent writes`),
      h('div', { class: 'versions', role: 'list', 'aria-label': `Values of ${c.field}` }, versions),
      form,
      allText ? null : h('p', { class: 'hint' }, 'Read as the CLI reads it: JSON when valid, text otherwise.'),
      errorEl);
  }

  function render() {
    if (!store.conflictsReady) {
      fill(listEl, store.conflictsError
        ? h('p', { class: 'notice-bar' }, store.conflictsError)
        : h('p', { class: 'loading' }, 'Loading…'));
      return;
    }
    if (store.conflicts.length === 0) {
      cards.clear();
      fill(listEl, h('p', { class: 'empty' }, 'No open conflicts. When two machines change the same field while apart, both values show here until one is kept.'));
      return;
    }
    const seen = new Set();
    const els = store.conflicts.map((c) => {
      const key = `${c.id}\n${c.field}`;
      const item = store.items.get(c.id);
      const sig = jsonText([c.versions, item ? itemTitle(item) : null]);
      seen.add(key);
      let entry = cards.get(key);
      if (!entry || entry.sig !== sig) {
        entry = { el: card(c), sig };
        cards.set(key, entry);
      }
      return entry.el;
    });
    for (const k of [...cards.keys()]) if (!seen.has(k)) cards.delete(k);
    keepFocus(() => fill(listEl, ...els));
  }

  const unsubscribe = subscribe((what) => {
    if (what === 'conflicts' || what === 'items') render();
  });
  setTitle('Conflicts');
  render();
  return { el, destroy: unsubscribe };
}

// ---------------------------------------------------------------------------------------------
// The cluster: this node, its peers (path, connected, last sync, what each lacks), its own
// changes (DIRTY / SYNCING / SYNCED), rejected changes and refused connections.

const SOURCES = {
  static: 'named with --peer',
  mdns: 'found by mDNS',
  relay: 'known through the relay',
  gossip: 'passed on by another member',
  inbound: 'connected to this node',
};

// Why a member is in this node's view (status's view.active[].reason, Docs/SCALE.md).
const VIEW_REASONS = {
  'full mesh': 'every member: the cluster is small enough',
  chosen: 'this node dialled it to fill its view',
  accepted: 'it dialled this node, which had room',
  rescued: 'it had no session at all, so it was let in',
};

const FIELD_NAMES = { _type: 'created (its type)', _deleted: 'deleted or restored' };

/**
 * A field's history on a time line: one mark per kept version at the time it was written, in its
 * writer's colour (the same writer, the same colour, on every lane of the page); the values an
 * open conflict keeps side by side, forked above and below the line from the moment the conflict
 * began; and the moment the latest conflict was settled. `entries` newest first, as the API gives
 * them; `change` the field's latest change in the feed.
 */
function fieldLane(entries, label, conflicted, change) {
  const W = 600;
  const H = conflicted ? 92 : 64;
  const mid = conflicted ? 42 : 26;
  const when = (t) => Date.parse(t);
  const times = entries.map((e) => when(e.time));
  const marked = change && (change.kind === 'settle' || change.kind === 'conflict') ? when(change.time) : null;
  if (marked != null) times.push(marked);
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const x = (t) => (t1 === t0 ? W / 2 : 20 + ((W - 40) * (t - t0)) / (t1 - t0));
  const siblings = conflicted ? entries.filter((e) => e.live) : [];
  // The fork: the line splits just before the first value kept side by side (where the writers
  // had not seen each other's edit), one branch per value, to the end.
  const forkX = siblings.length > 1 ? Math.max(12, Math.min(...siblings.map((e) => x(when(e.time)))) - 14) : null;
  const lines = [svgEl('line', { class: 'axis', x1: 12, y1: mid, x2: forkX ?? W - 12, y2: mid })];
  const marks = [];
  const pinned = [];
  const anchorAt = (px) => (px > W - 60 ? 'end' : px < 60 ? 'start' : 'middle');
  if (forkX != null) {
    siblings.forEach((e, i) => {
      const y = mid + (i % 2 === 0 ? -1 : 1) * (16 + 6 * Math.floor(i / 2));
      lines.push(svgEl('polyline', { class: 'fork', points: `${forkX},${mid} ${x(when(e.time))},${y} ${W - 12},${y}` }));
    });
    const at = marked != null ? x(marked) : W - 12;
    pinned.push(svgEl('text', { class: 'event conflict', x: at, y: H - 6, 'text-anchor': anchorAt(at) },
      marked != null ? `conflict, ${relTime(change.time)}` : 'conflict'));
  }
  if (change && change.kind === 'settle' && !conflicted) {
    pinned.push(svgEl('g', { class: 'event settle', 'data-event': 'settled' },
      svgEl('title', null, `The conflict on ${label} was settled ${new Date(marked).toLocaleString()}`),
      svgEl('path', { d: `M${x(marked)},${mid - 9} l9,9 l-9,9 l-9,-9 z` }),
      svgEl('text', { x: x(marked), y: H - 6, 'text-anchor': anchorAt(x(marked)) }, 'settled')));
  }
  entries.forEach((e, i) => {
    const sib = siblings.indexOf(e);
    const y = sib < 0 ? mid : mid + (sib % 2 === 0 ? -1 : 1) * (16 + 6 * Math.floor(sib / 2));
    const who = writerName(e.writer, e.node);
    const text = `${label} ${writeWords(e.write)}, by ${who}, ${new Date(when(e.time)).toLocaleString()}`
      + (e.live ? (sib >= 0 ? ' (live, in conflict)' : ' (live)') : '');
    marks.push(svgEl('g', { class: 'version', 'data-version': `${e.node}:${e.counter}`, 'data-live': e.live ? 'yes' : 'no' },
      svgEl('title', null, text),
      svgEl('circle', { class: `mark w${writerColour(e.node)}${e.live ? ' live' : ''}`, cx: x(when(e.time)), cy: y, r: e.live ? 7 : 5 })));
    // The newest and the oldest times, the oldest only where it does not run into the newest.
    const far = Math.abs(x(when(e.time)) - x(when(entries[0].time))) > 90;
    if (i === 0 || (i === entries.length - 1 && far)) {
      const px = x(when(e.time));
      marks.push(svgEl('text', { class: 'tick', x: px, y: 12, 'text-anchor': anchorAt(px) }, relTime(e.time)));
    }
  });
  const writers = [...new Set(entries.map((e) => writerName(e.writer, e.node)))];
  const summary = `${label}: ${entries.length} version${entries.length === 1 ? '' : 's'} by ${writers.join(', ')}`
    + (conflicted ? `; ${siblings.length} values in an open conflict` : '')
    + (change && change.kind === 'settle' && !conflicted ? '; its latest conflict settled' : '');
  return h('figure', { class: 'lane', 'data-scope': `lane:${label}` },
    svgEl('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary }, lines, pinned, marks),
    h('figcaption', { class: 'visually-hidden' }, summary));
}

/** A write in a few plain words (a mark's tooltip): what describeWrite shows, as text. */
function writeWords(write) {
  if (write && Object.prototype.hasOwnProperty.call(write, 'set')) return `set to ${shorten(valueText(write.set), 40)}`;
  if (write && write.list) {
    const l = write.list;
    if (l.replaced) return `set to the list ${shorten(valueText(l.added || []), 40)}`;
    const parts = [];
    if ((l.added || []).length) parts.push(`added ${shorten((l.added || []).map(valueText).join(', '), 30)}`);
    if ((l.removed || []).length) parts.push(`removed ${shorten((l.removed || []).map(valueText).join(', '), 30)}`);
    return parts.join('; ') || 'changed nothing in the list';
  }
  if (write && write.unset === true) return 'removed';
  if (write && write.overrule) return `refused; kept ${shorten(valueText(write.overrule.kept), 40)}`;
  return 'changed';
}

/** One of six colours for a writer, the same for it wherever it shows. */
const writerColours = new Map();
function writerColour(node) {
  if (!writerColours.has(node)) writerColours.set(node, writerColours.size % 6);
  return writerColours.get(node);
}

const PATHS = {
  direct: 'direct',
  relay: 'the relay',
  'via relay': 'through the relay',
  'via other peers': 'through other peers',
};

function clusterView() {
  const el = h('section', { 'aria-labelledby': 'cluster-title' });
  const body = h('div');
  add(el, [
    h('div', { class: 'view-head' },
      h('div', null, h('h1', { id: 'cluster-title', tabindex: '-1' }, 'Cluster'), h('p', { class: 'sub', id: 'cluster-sub' }))),
    body,
  ]);

  function card(label, value, cls) {
    return h('div', { class: 'panel card' }, h('p', { class: 'k' }, label), h('p', { class: cls ? `v ${cls}` : 'v' }, value));
  }

  function itemLabel(id) {
    const item = store.items.get(id);
    return h('a', { href: `#/item/${encodeURIComponent(id)}`, 'data-key': `i:${id}` }, item ? itemTitle(item) : id.slice(0, 8));
  }

  function peersTable(peers) {
    if (!peers.length) {
      return h('p', { class: 'empty' }, 'This node knows no peer yet. Start it with --peer HOST:PORT, or let mDNS find the others on the LAN.');
    }
    return h('div', { class: 'panel table-wrap' }, h('table', { class: 'peers', 'aria-label': 'Peers' },
      h('thead', null, h('tr', null, ['Peer', 'Path', 'State', 'Last sync', 'Lacks', 'Problem'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, peers.map((p) => {
        const name = p.name || (p.node_id ? `node ${p.node_id.slice(0, 7)}` : p.address || 'unknown');
        const recv = p.receiving;
        return h('tr', { 'data-peer': p.name || p.node_id || p.address || '' },
          h('td', { 'data-label': 'Peer' }, h('div', null, h('strong', null, name),
            p.address ? h('div', { class: 'muted mono' }, p.address) : null,
            p.node_id ? h('div', { class: 'muted mono', title: p.node_id }, p.node_id.slice(0, 12)) : null)),
          h('td', { 'data-label': 'Path' }, h('div', null, PATHS[p.path] || p.path || '—', p.source ? h('div', { class: 'muted' }, SOURCES[p.source] || p.source) : null)),
          h('td', { 'data-label': 'State' }, h('div', null,
            h('span', { class: p.connected ? 'badge connected state' : 'badge down state' }, p.connected ? 'connected' : 'not connected'),
            recv ? h('div', { class: 'muted' }, `receiving ${Number(recv.received).toLocaleString()} of ~${Number(recv.expected).toLocaleString()}${recv.eta_seconds != null ? `, ${Math.round(recv.eta_seconds)} s left` : ''}`) : null)),
          h('td', { 'data-label': 'Last sync' }, timeEl(p.last_sync)),
          h('td', { 'data-label': 'Lacks' }, p.lacks == null
            ? h('span', { class: 'muted' }, 'unknown')
            : p.lacks === 0 ? h('span', null, 'nothing') : h('span', null, `${Number(p.lacks).toLocaleString()} field change${p.lacks === 1 ? '' : 's'}`)),
          h('td', { 'data-label': 'Problem' }, p.last_error ? h('span', { class: 'peer-error' }, plainError(p.last_error)) : h('span', { class: 'muted' }, 'none')));
      }))));
  }

  function changesSection(ch) {
    if (!ch) {
      return [h('p', { class: 'muted' }, 'This node knows no peer yet, so its changes have nowhere to go: they wait as they are.')];
    }
    const where = ch.relay ? `the relay (${ch.relay.slice(0, 7)})` : 'every peer';
    const num = (v) => (v == null ? 0 : v);
    const recent = ch.recent || [];
    return [
      h('p', { class: 'sub' }, `This node’s own live field changes, by whether ${where} has them.`),
      h('div', { class: 'cards' },
        card('Dirty: waiting to leave', String(num(ch.dirty))),
        card('Syncing: being handed over', String(num(ch.syncing))),
        card(`Synced: ${ch.relay ? 'on the relay' : 'on every peer'}`, String(num(ch.synced)))),
      recent.length
        ? h('div', { class: 'panel table-wrap' }, h('table', { class: 'recent', 'aria-label': 'Recent changes of this node' },
          h('thead', null, h('tr', null, ['Item', 'Field', 'State'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', null, recent.map((r) => h('tr', null,
            h('td', { 'data-label': 'Item' }, itemLabel(r.id)),
            h('td', { 'data-label': 'Field' }, FIELD_NAMES[r.field] || r.field),
            h('td', { 'data-label': 'State' }, h('span', { class: `badge ${String(r.state).toLowerCase()}` }, r.state)))))))
        : null,
    ];
  }

  /** A member's name as the status's peers give it, else the start of its node id. */
  function peerName(peers, id) {
    const p = (peers || []).find((x) => x.node_id === id);
    return p && p.name ? p.name : String(id).slice(0, 7);
  }

  // Past eight machines a node keeps sessions with a few members only (its active view) and knows
  // more it can turn to (its passive view); a change goes from member to member.
  function viewSection(v, peers) {
    if (!v) return null;
    const bounded = v.mode === 'bounded';
    return [
      h('h2', null, 'The view'),
      h('p', { class: 'sub', id: 'view-summary' }, bounded
        ? `This cluster is past a full mesh: this node keeps sessions with ${v.active.length} member${v.active.length === 1 ? '' : 's'} (it aims for ${v.target}) and knows ${v.passive} more it can turn to. Changes reach the others from member to member.`
        : `A full mesh: this node keeps a session with every member it knows (${v.active.length}).`),
      v.active.length
        ? h('div', { class: 'panel table-wrap' }, h('table', { class: 'view', 'aria-label': 'Members in this node’s view' },
          h('thead', null, h('tr', null, ['Member', 'Why it is in the view'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', null, v.active.map((m) => h('tr', { 'data-member': m.node_id },
            h('td', { 'data-label': 'Member' }, h('strong', null, peerName(peers, m.node_id))),
            h('td', { 'data-label': 'Why it is in the view' }, VIEW_REASONS[m.reason] || m.reason))))))
        : null,
    ];
  }

  function pastSection(c, peers) {
    if (!c) return null;
    const mb = (b) => `${(Number(b) / 1e6).toFixed(1)} MB`;
    return [
      h('h2', null, 'The past'),
      h('p', { class: 'sub' }, 'Deleted items stay restorable for the trash window; after it, once every active member has seen the delete, only a small tombstone stays, and it goes too an away window later.'),
      h('div', { class: 'cards' },
        card('Deleted, still kept whole', Number(c.collectable_items).toLocaleString()),
        card('Collected', Number(c.collected_items).toLocaleString()),
        card('Purged', Number(c.purged_items || 0).toLocaleString()),
        card('Replica file', `${mb(c.file_bytes)} (${mb(c.free_bytes)} free)`)),
      h('p', { class: 'muted' },
        c.frontier_at ? ['Every member had seen everything up to a point reached ', timeEl(c.frontier_at), '.'] : 'The members have not all caught up with each other yet.',
        c.held_back_by ? ` Waiting for ${peerName(peers, c.held_back_by)}.` : '',
        c.departed && c.departed.length ? ` ${c.departed.length} member${c.departed.length === 1 ? ' is' : 's are'} away or forgotten and hold${c.departed.length === 1 ? 's' : ''} nothing back.` : '',
        c.away_since ? [' This machine counts itself away (nothing heard of the cluster, or its replica put back from an old copy) since ', timeEl(c.away_since), ': it rejoins from a snapshot when it meets a current member.'] : '',
        c.rejoined_at ? [' It last rejoined from a snapshot ', timeEl(c.rejoined_at), '.'] : ''),
    ];
  }

  /**
   * The cluster as this node sees it, drawn: this node in the middle with its open conflicts,
   * every member it knows around it (the relay as a square), a line for each session (solid:
   * connected; dashed: reached through the relay or other members; dotted: no session now),
   * and how far behind each member is (what of this replica it is not known to hold).
   */
  function clusterGraph(st) {
    const peers = (st.peers || []).filter((p) => p.node_id || p.address);
    const relayId = st.changes && st.changes.relay;
    const isRelay = (p) => p.source === 'relay' || (relayId && p.node_id === relayId);
    const W = 600;
    const H = peers.length > 6 ? 440 : 360;
    const cx = W / 2;
    const cy = H / 2;
    const R = Math.min(W, H) / 2 - 62;
    const at = new Map(peers.map((p, i) => {
      const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(peers.length, 1);
      return [p, [cx + R * Math.cos(a), cy + R * Math.sin(a)]];
    }));
    const relay = peers.find(isRelay);
    const lagOf = (p) => (p.lacks == null ? 'unknown' : p.lacks === 0 ? 'in-sync' : 'behind');
    const lagText = (p) => (p.lacks == null ? 'lag unknown' : p.lacks === 0 ? 'in sync'
      : `behind by ${Number(p.lacks).toLocaleString()}`);
    const via = (p) => String(p.path || '').startsWith('via');
    const edges = peers.map((p) => {
      const [x2, y2] = at.get(p);
      const [x1, y1] = p.path === 'via relay' && relay && relay !== p ? at.get(relay) : [cx, cy];
      const kind = p.connected ? 'up' : via(p) ? 'via' : 'down';
      return svgEl('line', { class: `edge ${kind}`, x1, y1, x2, y2, 'data-edge': p.name || p.node_id });
    });
    const members = peers.map((p) => {
      const [x, y] = at.get(p);
      const name = p.name || (p.node_id ? p.node_id.slice(0, 7) : p.address);
      const state = p.connected ? 'connected' : via(p) ? PATHS[p.path] || p.path : 'not connected';
      const shape = isRelay(p)
        ? svgEl('rect', { class: `member ${lagOf(p)}`, x: x - 24, y: y - 24, width: 48, height: 48, rx: 6 })
        : svgEl('circle', { class: `member ${lagOf(p)}`, cx: x, cy: y, r: 24 });
      return svgEl('g', {
        class: `node${p.connected ? '' : ' offline'}`, 'data-member': name, 'data-lag': lagOf(p),
        'data-lacks': p.lacks == null ? '' : p.lacks, 'data-connected': p.connected ? 'yes' : 'no',
      },
      svgEl('title', null, `${name}${isRelay(p) ? ' (relay)' : ''}: ${state}; ${lagText(p)}`),
      shape,
      svgEl('text', { class: 'label', x, y: y + 40, 'text-anchor': 'middle' }, name + (isRelay(p) ? ' (relay)' : '')),
      svgEl('text', { class: `lag ${lagOf(p)}`, x, y: y + 56, 'text-anchor': 'middle' }, lagText(p)));
    });
    const conflicts = Number(st.conflicts || 0);
    const me = svgEl('g', { class: 'node self', 'data-member': st.name, 'data-conflicts': conflicts },
      svgEl('title', null, `${st.name} (this node): ${conflicts} open conflict${conflicts === 1 ? '' : 's'}`),
      svgEl('circle', { class: 'member self', cx, cy, r: 32 }),
      svgEl('text', { class: 'label self', x: cx, y: cy + 5, 'text-anchor': 'middle' }, st.name),
      svgEl('text', { class: `lag ${conflicts ? 'behind' : 'in-sync'}`, x: cx, y: cy + 50, 'text-anchor': 'middle' },
        conflicts ? `${conflicts} open conflict${conflicts === 1 ? '' : 's'}` : 'no open conflict'));
    const behind = peers.filter((p) => p.lacks > 0).length;
    const up = peers.filter((p) => p.connected).length;
    const summary = `${st.name} and ${peers.length} member${peers.length === 1 ? '' : 's'}: ${up} connected, `
      + `${behind} behind, ${conflicts} open conflict${conflicts === 1 ? '' : 's'}.`;
    return h('figure', { class: 'panel cluster-graph', 'data-scope': 'cluster-graph' },
      svgEl('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary }, edges, members, me),
      h('figcaption', { class: 'muted' }, summary,
        ' A solid line is a session now; dashed, a member reached through the relay or other members; dotted, none. ',
        '“Behind by N”: field changes of this replica the member is not known to hold.'));
  }

  function listSection(title, entries, describe, none) {
    return [
      h('h2', null, title),
      entries && entries.length
        ? h('ul', { class: 'panel problem-list' }, entries.map((e) => h('li', null, describe(e))))
        : h('p', { class: 'muted' }, none),
    ];
  }

  function render() {
    const s = store.status;
    const sub = el.querySelector('#cluster-sub');
    if (!s) {
      fill(body, store.statusError
        ? h('p', { class: 'notice-bar', role: 'alert' }, store.statusError)
        : h('p', { class: 'loading' }, 'Loading…'));
      return;
    }
    sub.textContent = `${s.name} (${s.node_id.slice(0, 7)}) in cluster ${s.cluster_id.slice(0, 7)}`;
    const peers = s.peers || [];
    const up = peers.filter((p) => p.connected).length;
    const vv = Object.entries(s.version_vector || {});
    keepFocus(() => fill(body, 
      store.statusError ? h('p', { class: 'notice-bar', role: 'alert' }, `${store.statusError} (showing what it said last)`) : null,
      s.damaged ? h('p', { class: 'notice-bar', role: 'alert' }, `The replica is damaged: ${s.damaged}`) : null,
      h('div', { class: 'cards' },
        card('Peers connected', `${up} of ${peers.length}`),
        card('Items', Number(s.items).toLocaleString()),
        card('Deleted', Number(s.deleted).toLocaleString()),
        card('Open conflicts', Number(s.conflicts).toLocaleString())),
      h('h2', null, 'Who talks to whom'),
      clusterGraph(s),
      h('h2', null, 'Peers'),
      peersTable(peers),
      viewSection(s.view, peers),
      h('h2', null, 'This node’s changes'),
      changesSection(s.changes),
      pastSection(s.collection, peers),
      listSection('Rejected changes', s.rejected, (r) => [
        h('strong', null, r.field || 'a field'), ' of ', r.id ? itemLabel(r.id) : 'an item', r.reason ? `: ${r.reason}` : '',
      ], s.changes && s.changes.relay ? 'None: the relay took every change of this node.' : 'None.'),
      listSection('Refused connections', s.refused, (r) => [
        h('span', { class: 'mono' }, r.address), `: ${plainError(r.reason)}`,
        h('div', { class: 'muted' }, `${r.count} time${r.count === 1 ? '' : 's'}, last `, timeEl(r.last)),
      ], 'None since the node started.'),
      s.revoked_writes && s.revoked_writes.length
        ? listSection('Refused writes of revoked machines and readers', s.revoked_writes, (r) => [
          h('strong', null, r.field), ' of ', itemLabel(r.id), r.reason ? `: ${r.reason}` : '',
        ], '')
        : null,
      h('h2', null, 'This node'),
      h('dl', { class: 'panel kv' },
        h('dt', null, 'Node'), h('dd', null, `${s.name} `, h('code', null, s.node_id)),
        h('dt', null, 'Cluster'), h('dd', null, h('code', null, s.cluster_id)),
        h('dt', null, 'State'), h('dd', null, s.running ? `running, listening on ${s.listen || '—'}` : 'not running'),
        h('dt', null, 'API'), h('dd', null, s.api || location.host),
        h('dt', null, 'Discovery'), h('dd', null, s.mdns || '—'),
        h('dt', null, 'Digest'), h('dd', null, h('code', null, s.digest), h('div', { class: 'muted' }, 'Equal on replicas that hold the same data.')),
        h('dt', null, 'Version vector'), h('dd', null, vv.length
          ? vv.map(([node, n]) => h('div', { class: 'mono' }, `${node.slice(0, 7)}: ${n}`))
          : '—'))));
  }

  const unsubscribe = subscribe((what) => { if (what === 'status') render(); });
  setTitle('Cluster');
  render();
  return { el, destroy: unsubscribe };
}

/** A node's error text, with its machine-readable prefix (wrong-cluster: ...) made readable. */
function plainError(text) {
  if (!text) return '';
  const t = String(text).replace(/^([a-z]+(?:-[a-z]+)+): /, (all, code) => `${code.replace(/-/g, ' ')}: `);
  return t.charAt(0).toUpperCase() + t.slice(1);
}

boot();
