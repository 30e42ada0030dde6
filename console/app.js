// The jobctl console. It reads and acts only through the coordinator's JSON API (man 7
// jobctl-api) with the token the viewer gives it, kept in this tab's sessionStorage. Text from
// the API is always put in the page as text (textContent), never parsed as markup.
'use strict';

const main = document.getElementById('main');
const banner = document.getElementById('banner');
const TOKEN_KEY = 'jobctl.token';
const FAILING = new Set(['failed', 'timed_out', 'lost']);

// ---- small helpers ----

// el('a', {href: '#/x', class: 'y'}, 'text', child, ...): an element; strings become text nodes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'onclick' || k === 'oninput' || k === 'onsubmit' || k === 'onkeydown') e[k] = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) if (c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function showError(message) {
  banner.className = 'banner';
  banner.textContent = message;
  banner.hidden = false;
}
function showInfo(message) {
  banner.className = 'banner info';
  banner.textContent = message;
  banner.hidden = false;
}
function clearBanner() { banner.hidden = true; banner.textContent = ''; }

function ms(iso) { return iso ? Date.parse(iso) : NaN; }

function relative(t) {
  const d = (t - Date.now()) / 1000;
  const a = Math.abs(d);
  let text;
  if (a < 1.5) return 'now';
  if (a < 90) text = `${Math.round(a)} s`;
  else if (a < 90 * 60) text = `${Math.round(a / 60)} min`;
  else if (a < 36 * 3600) text = `${Math.round(a / 3600)} h`;
  else text = `${Math.round(a / 86400)} d`;
  return d < 0 ? `${text} ago` : `in ${text}`;
}

function exact(t, zone) {
  const opts = { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit',
    second: '2-digit', timeZoneName: 'short' };
  try {
    return new Intl.DateTimeFormat(undefined, zone ? { ...opts, timeZone: zone } : opts).format(new Date(t));
  } catch (e) {
    return new Date(t).toISOString();
  }
}

// A date as "3 min ago", with the exact instant (the viewer's zone, UTC, and the job's zone when
// given) on hover.
function when(iso, zone) {
  const t = ms(iso);
  if (!iso || Number.isNaN(t)) return el('span', { class: 'muted' }, '-');
  let title = `${exact(t)}\n${new Date(t).toISOString()}`;
  if (zone) title += `\n${exact(t, zone)} (${zone})`;
  return el('time', { datetime: new Date(t).toISOString(), title }, relative(t));
}

function duration(msec) {
  if (!(msec >= 0)) return '-';
  if (msec < 1000) return `${Math.round(msec)} ms`;
  if (msec < 60000) return `${(msec / 1000).toFixed(1)} s`;
  if (msec < 3600000) return `${Math.floor(msec / 60000)} min ${Math.round((msec % 60000) / 1000)} s`;
  return `${Math.floor(msec / 3600000)} h ${Math.round((msec % 3600000) / 60000)} min`;
}

// A shard's peak memory: "512 KiB", "1.4 GiB"; "-" where its agent did not report it.
function bytes(n) {
  if (n == null || !(n >= 0)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  while (n >= 1024 && u < units.length - 1) { n /= 1024; u++; }
  return `${u === 0 || n >= 100 ? Math.round(n) : n.toFixed(1)} ${units[u]}`;
}

function runDuration(r) {
  const starts = (r.shards || []).map((s) => ms(s.started_at)).filter((t) => !Number.isNaN(t));
  const start = starts.length ? Math.min(...starts) : ms(r.created_at);
  const end = r.finished_at ? ms(r.finished_at) : Date.now();
  return end - start;
}

function badge(state) {
  const s = state || 'none';
  return el('span', { class: `badge s-${s}` }, s.replace('_', ' '));
}

function enc(s) { return encodeURIComponent(s); }

// ---- the token and the API ----

let token = sessionStorage.getItem(TOKEN_KEY) || '';
let who = null;  // {name, role, jobs}

// A link may carry the token in its fragment (#token=..., or #/job/x&token=...): it never
// reaches the server. It is moved to sessionStorage and taken out of the address.
function takeTokenFromFragment() {
  const parts = location.hash.replace(/^#/, '').split('&');
  const found = parts.find((p) => p.startsWith('token='));
  if (!found) return;
  token = decodeURIComponent(found.slice(6));
  sessionStorage.setItem(TOKEN_KEY, token);
  const route = parts.filter((p) => !p.startsWith('token=')).join('&') || '/jobs';
  history.replaceState(null, '', `#${route}`);
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(path, options = {}) {
  const used = token;
  const headers = { Authorization: `Bearer ${used}` };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method: options.method || 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', 'the coordinator did not answer');
  }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!res.ok) {
    const message = body && body.message ? body.message : `${res.status} ${res.statusText}`;
    // Forgotten only if it is still the token in use: a late refusal of one signed in
    // before must not sign out the one pasted since.
    if (res.status === 401 && token === used) {
      sessionStorage.removeItem(TOKEN_KEY);
      token = '';
    }
    throw new ApiError(res.status, body && body.error, message);
  }
  if (options.total) return { body, total: Number(res.headers.get('X-Total-Count')) };
  return body;
}

// An action button. Buttons of actions the token's role does not allow are shown too (muted,
// saying so): the coordinator decides, and its refusal is what the viewer sees.
function actionButton(label, attrs, role, job) {
  const allowed = can(role, job);
  const b = el('button', { type: 'button', ...attrs, class: `${attrs.class || ''}${allowed ? '' : ' not-allowed'}`.trim(),
    title: allowed ? null : `this token (${who ? who.role : 'none'}) may not ${label.toLowerCase()} this; the coordinator will refuse` },
  label);
  return b;
}

function can(role, job) {
  if (!who) return false;
  if (who.role === 'admin') return true;
  if (role !== 'trigger' || who.role !== 'trigger') return false;
  return !who.jobs || globMatch(who.jobs, job);
}

// The coordinator's glob: * any run of characters, ? one character.
function globMatch(glob, s) {
  const re = new RegExp(`^${glob.split('').map((c) => (c === '*' ? '.*' : c === '?' ? '.' :
    c.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('')}$`);
  return re.test(s);
}

// Runs an action button's request; the answer (or refusal) shows in the banner.
async function act(button, what, path, body, after) {
  button.disabled = true;
  try {
    const out = await api(path, { method: 'POST', body: body || {} });
    showInfo(`${what}: done`);
    if (after) after(out);
  } catch (e) {
    showError(`${what} refused: ${e.message}`);
  } finally {
    button.disabled = false;
  }
}

// ---- pages ----

let page = new AbortController();  // aborted when the viewer leaves the page

function login(message) {
  page.abort();  // nothing of the page before goes on asking
  page = new AbortController();
  who = null;
  document.getElementById('who').textContent = '';
  const input = el('input', { type: 'password', id: 'token', autocomplete: 'off',
    placeholder: 'a token from `jobctl token create`', 'aria-label': 'Token' });
  const form = el('form', { class: 'login', onsubmit: (ev) => {
    ev.preventDefault();
    token = input.value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    start();
  } },
  el('h1', {}, 'jobctl console'),
  el('p', {}, 'Paste a token. It is kept in this browser tab only, and sent to this coordinator alone. ',
    'A read token sees everything and changes nothing; a trigger token may also trigger its jobs; ',
    'an admin token may pause, resume, cancel, retry and drain.'),
  message ? el('p', { class: 's-failed', role: 'alert' }, message) : null,
  input,
  el('button', { type: 'submit' }, 'Open'));
  main.replaceChildren(form);
  input.focus();
}

function markNav(name) {
  for (const id of ['nav-jobs', 'nav-fleet']) {
    document.getElementById(id).classList.toggle('here', id === `nav-${name}`);
  }
}

// -- jobs --

function scheduleWords(s) {
  if (!s) return 'on demand';
  const at = s.trim();
  const named = { '@yearly': 'once a year', '@annually': 'once a year', '@monthly': 'once a month',
    '@weekly': 'once a week', '@daily': 'every day at midnight', '@midnight': 'every day at midnight',
    '@hourly': 'every hour' };
  if (named[at]) return named[at];
  let m = at.match(/^@every\s+(\S+)$/);
  if (m) return `every ${m[1]}`;
  m = at.match(/^@delay\s+(\S+)$/);
  if (m) return `${m[1]} after each run ends`;
  const f = at.split(/\s+/);
  if (f.length !== 5 && f.length !== 6) return at;
  const secs = f.length === 6 ? f.shift() : null;
  const [min, hour, dom, mon, dow] = f;
  const every = (x, unit) => {
    if (x === '*' || x === '*/1') return `every ${unit}`;
    const e = x.match(/^\*\/(\d+)$/);
    return e ? `every ${e[1]} ${unit}s` : null;
  };
  const rest = dom === '*' && mon === '*' && dow === '*';
  if (secs !== null && min === '*' && hour === '*' && rest) {
    const w = every(secs, 'second');
    if (w) return w;
  }
  if ((secs === null || secs === '0') && hour === '*' && rest) {
    const w = every(min, 'minute');
    if (w) return w;
    if (/^\d+$/.test(min)) return `every hour at minute ${min}`;
  }
  if ((secs === null || secs === '0') && /^\d+$/.test(min) && /^\d+$/.test(hour) && dom === '*' && mon === '*') {
    const t = `${hour.padStart(2, '0')}:${min.padStart(2, '0')}`;
    if (dow === '*') return `every day at ${t}`;
    const days = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
    if (/^\d$/.test(dow)) return `every ${days[Number(dow)]} at ${t}`;
    if (dow === '1-5') return `weekdays at ${t}`;
  }
  if ((secs === null || secs === '0') && /^\d+$/.test(min) && /^\d+$/.test(hour) && /^\d+$/.test(dom) &&
      mon === '*' && dow === '*') {
    return `day ${dom} of every month at ${hour.padStart(2, '0')}:${min.padStart(2, '0')}`;
  }
  return at;
}

const strips = new Map();  // job name -> {at, runs}
const stripCells = new Map();  // job name -> the cells waiting for its strip (asked once)
const stripQueue = [];  // names not yet asked
let stripActive = 0;

// The last 30 runs of a job, read when its row comes into view (at most 4 reads at once,
// each job once, kept 15 s).
function wantStrip(name, cell) {
  const have = strips.get(name);
  if (have && Date.now() - have.at < 15000) {
    cell.replaceChildren(stripOf(have.runs));
    return;
  }
  if (stripCells.has(name)) {
    stripCells.get(name).push(cell);
    return;
  }
  stripCells.set(name, [cell]);
  stripQueue.push(name);
  queueMicrotask(pumpStrips);  // once the row is in the page
}
function pumpStrips() {
  while (stripActive < 4 && stripQueue.length) {
    const name = stripQueue.shift();
    if (!(stripCells.get(name) || []).some((c) => c.isConnected)) {
      stripCells.delete(name);  // scrolled away before it was asked
      continue;
    }
    stripActive++;
    api(`/v1/runs?job=${enc(name)}&limit=30`, { signal: page.signal })
      .then((runs) => {
        strips.set(name, { at: Date.now(), runs });
        for (const cell of stripCells.get(name) || []) {
          if (cell.isConnected) cell.replaceChildren(stripOf(runs));
        }
      })
      .catch(() => {})
      .finally(() => { stripCells.delete(name); stripActive--; pumpStrips(); });
  }
}
function stripOf(runs) {
  const cells = [];
  const ordered = runs.slice(0, 30).reverse();  // oldest left
  for (let i = ordered.length; i < 30; i++) cells.push(el('span', { class: 'b-empty' }));
  for (const r of ordered) {
    // Out of the tab order (30 stops a row); the job's page lists the same runs.
    cells.push(el('a', { class: `b-${r.state}`, href: `#/run/${r.id}`, tabindex: -1,
      title: `run ${r.id}: ${r.state}, ${r.scheduled_at || r.created_at}`, 'aria-label': `run ${r.id} ${r.state}` }));
  }
  return el('span', { class: 'strip', 'data-runs': runs.length }, cells);
}

// The list is read a page at a time (the coordinator sorts and filters it): only the pages
// of the rows in view, so a fleet of 100,000 jobs costs the coordinator a page per scroll.
const PAGE = 200;

async function jobsPage() {
  markNav('jobs');
  const signal = page.signal;
  const filter = el('input', { id: 'filter', type: 'search', placeholder: 'Filter by name  (/)',
    'aria-label': 'Filter jobs by name', size: 40, maxlength: 256 });
  const labelFilter = el('input', { id: 'label-filter', type: 'search', placeholder: 'Labels, e.g. role=web',
    'aria-label': 'Filter jobs by the labels they run on', title: 'Jobs whose `on` has every term: role=web, dc!=fra1, or a key alone',
    size: 24, maxlength: 256 });
  const count = el('span', { class: 'muted', id: 'count' });
  const head = el('div', { class: 'jobs-head', role: 'row' },
    el('span', {}, 'Job'), el('span', {}, 'Schedule'), el('span', {}, 'Next fire'),
    el('span', {}, 'Last result'), el('span', {}, 'Last 30 runs'), el('span', {}, ''));
  const space = el('div', { class: 'jobs-space', role: 'rowgroup' });
  const scroll = el('div', { class: 'jobs-scroll', id: 'jobs' }, space);
  main.replaceChildren(el('h1', {}, 'Jobs'), el('div', { class: 'row' }, filter, labelFilter, count), head, scroll);

  const ROW = 34;
  let total = 0;
  let query = '';
  let labels = '';
  // The pages read for one query: page number -> array of jobs, or a promise while it is
  // read. A new query or a refresh starts a new map; answers for an older one are dropped.
  let pages = new Map();
  const fetchPage = (n) => {
    if (pages.has(n)) return pages.get(n);
    const mine = pages;
    const p = api(`/v1/jobs?order=health&offset=${n * PAGE}&limit=${PAGE}&q=${enc(query)}` +
      (labels ? `&label=${enc(labels)}` : ''),
      { signal, total: true }).then((r) => {
      if (mine !== pages) return null;
      mine.set(n, r.body);
      if (r.total !== total) { total = r.total; resize(); }
      requestAnimationFrame(render);
      return r.body;
    });
    mine.set(n, p);
    p.catch((e) => {
      if (mine.get(n) === p) mine.delete(n);
      if (e.name === 'AbortError') return;
      if (e.status === 401) login(e.message); else showError(e.message);
    });
    return p;
  };
  const resize = () => {
    space.style.height = `${total * ROW}px`;
    count.textContent = `${total} ${total === 1 ? 'job' : 'jobs'}${query || labels ? ' match' : ''}`;
  };
  function render() {
    if (signal.aborted) return;
    const top = scroll.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - 5);
    const last = Math.min(total, Math.ceil((top + scroll.clientHeight) / ROW) + 5);
    const rows = [];
    for (let i = first; i < last; i++) {
      const have = pages.get(Math.floor(i / PAGE));
      if (Array.isArray(have)) {
        if (have[i % PAGE]) rows.push(jobRow(have[i % PAGE], i * ROW));
      } else if (!have) {
        fetchPage(Math.floor(i / PAGE)).catch(() => {});  // drawn when it comes
      }
    }
    space.replaceChildren(...rows);
  }
  const reload = async () => {
    pages = new Map();
    await fetchPage(0);
    resize();
    render();
    document.body.dataset.jobsLoaded = String(total);
  };
  let timer = 0;
  filter.oninput = labelFilter.oninput = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      query = filter.value.trim();
      labels = labelFilter.value.trim().split(/\s+/).filter(Boolean).join(' ');
      scroll.scrollTop = 0;
      reload().catch(() => {});
    }, 150);
  };
  scroll.addEventListener('scroll', () => requestAnimationFrame(render), { passive: true });
  window.addEventListener('resize', render, { signal });

  await reload();
  performance.mark('jobs-rendered');  // console_bench reads it
  filter.focus();
  // The rows in view are read again every 10 seconds (the rows drawn stay until then).
  const refresh = async () => {
    if (signal.aborted) return;
    if (!document.hidden) {
      const n = Math.floor(scroll.scrollTop / ROW / PAGE);
      strips.clear();
      const keep = pages;
      pages = new Map();
      const fresh = pages;
      try {
        await fetchPage(n);
      } catch (e) {
        if (e.status === 401 || signal.aborted) return;
        if (pages === fresh) pages = keep;  // the filter did not change meanwhile
      }
    }
    setTimeout(refresh, 10000);
  };
  setTimeout(refresh, 10000);
}

function jobRow(j, y) {
  const strip = el('span', { class: 'strip-cell' });
  wantStrip(j.name, strip);
  const next = j.next_fire ? when(j.next_fire, j.timezone) : el('span', { class: 'muted' }, j.paused ? 'paused' : '-');
  const state = j.overdue && !(j.last_state && FAILING.has(j.last_state)) ? 'overdue' : j.last_state;
  const actions = el('span', { class: 'row' });
  if (j.kind !== 'step') {
    const b = actionButton('Trigger', { class: 'trigger', 'data-job': j.name }, 'trigger', j.name);
    b.onclick = () => act(b, `trigger ${j.name}`, `/v1/jobs/${enc(j.name)}/trigger`, {},
      (run) => { location.hash = `#/run/${run.id}`; });
    actions.append(b);
  }
  if (j.paused) actions.append(el('span', { class: 'badge s-paused' }, 'paused'));
  const row = el('div', { class: 'jobs-row', role: 'row', 'data-job': j.name },
    el('span', { title: (j.on || []).length ? `runs on ${j.on.join(' ')}` : '' },
      el('a', { href: `#/job/${enc(j.name)}`, title: j.description || j.name }, j.name),
      j.kind === 'flow' ? el('span', { class: 'muted' }, ' (flow)') : null,
      (j.on || []).length ? el('span', { class: 'sched-raw labels' }, `  ${j.on.join(' ')}`) : null),
    el('span', { title: j.schedule || '' }, scheduleWords(j.schedule),
      j.schedule && scheduleWords(j.schedule) !== j.schedule ? el('span', { class: 'sched-raw' }, `  ${j.schedule}`) : null,
      j.timezone ? el('span', { class: 'sched-raw' }, ` ${j.timezone}`) : null),
    el('span', {}, next),
    el('span', {}, state ? badge(state) : el('span', { class: 'muted' }, 'no run yet')),
    strip,
    actions);
  row.style.top = `${y}px`;  // through the CSSOM: the policy allows no style attribute
  return row;
}

// -- a job --

function tomlValue(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (v && typeof v === 'object') return `{ ${Object.entries(v).map(([k, x]) => `${k} = ${tomlValue(x)}`).join(', ')} }`;
  return String(v);
}

function msText(v) {
  if (v % 3600000 === 0) return `${v / 3600000}h`;
  if (v % 60000 === 0) return `${v / 60000}m`;
  if (v % 1000 === 0) return `${v / 1000}s`;
  return `${v}ms`;
}

// The definition as a jobs.toml [[job]] section: the keys that say something.
function definitionText(d) {
  const lines = ['[[job]]', `name = ${JSON.stringify(d.name)}`];
  const skip = new Set(['name', 'anchor_ms', 'misfire_cap', 'repeat_after_ms', 'dialect']);
  const empty = (v) => v === '' || v === null || v === undefined || (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0);
  for (const [k, v] of Object.entries(d)) {
    if (skip.has(k) || empty(v)) continue;
    if (k.endsWith('_ms') && typeof v === 'number') {
      if (v === 0 && k !== 'timeout_ms') continue;
      lines.push(`${k.slice(0, -3)} = ${JSON.stringify(msText(v))}`);
    } else if (k === 'log_cap_bytes') {
      lines.push(`log_cap = ${v}`);
    } else if (k === 'retry' && v.max === 0) {
      continue;
    } else if (k === 'retry') {
      lines.push(`retry = { max = ${v.max}, initial = "${msText(v.initial_ms)}", backoff = "${v.backoff}", max_delay = "${msText(v.max_delay_ms)}" }`);
    } else if (k === 'enabled' && v === true) {
      continue;
    } else {
      lines.push(`${k} = ${tomlValue(v)}`);
    }
  }
  return lines.join('\n');
}

function flowText(f) {
  const lines = ['[[flow]]', `name = ${JSON.stringify(f.name)}`];
  if (f.schedule) lines.push(`schedule = ${JSON.stringify(f.schedule)}`);
  for (const s of f.steps || []) {
    lines.push('', '[[flow.step]]', `name = ${JSON.stringify(s.name)}`);
    for (const [k, v] of Object.entries(s)) {
      if (k === 'name' || v === '' || v == null || (Array.isArray(v) && !v.length)) continue;
      if (typeof v === 'object' && !Array.isArray(v)) continue;
      lines.push(`${k} = ${tomlValue(v)}`);
    }
  }
  return lines.join('\n');
}

// The [[job]] or [[flow]] section named `name` in a job file's text, as written (with the
// comments inside it); "" when there is none.
function sectionOf(text, name) {
  const lines = text.split('\n');
  let start = -1;
  const found = [];
  const flush = (end) => {
    if (start < 0) return;
    const block = lines.slice(start, end);
    const named = block.some((l) => {
      const m = l.match(/^\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')/);
      return m && (m[1] !== undefined ? JSON.parse(`"${m[1]}"`) : m[2]) === name;
    });
    if (named) found.push(block.join('\n').trimEnd());
  };
  // A section goes on through its own sub-tables ([job.retry], [[flow.step]], ...) and ends
  // at the next [[job]] or [[flow]], or at any other table ([defaults], ...).
  lines.forEach((l, i) => {
    if (/^\s*\[\[(job|flow)\]\]/.test(l)) { flush(i); start = i; }
    else if (/^\s*\[/.test(l) && !/^\s*\[{1,2}\s*(job|flow)\./.test(l)) { flush(i); start = -1; }
  });
  flush(lines.length);
  return found.length === 1 ? found[0] : '';
}

// A chart's width in pixels: the page's (charts are drawn at their size, never scaled, so
// their text keeps its size).
function chartWidth() { return Math.max(480, main.clientWidth - 34); }

// Runs as marks on a time axis (when they were due, how they ended) and a duration bar chart.
function runCharts(runs) {
  const ordered = runs.slice().reverse();  // oldest first
  const W = chartWidth(), H = 140, P = 56;
  const times = ordered.map((r) => ms(r.scheduled_at || r.created_at));
  const t0 = Math.min(...times), t1 = Math.max(...times, t0 + 1000);
  const x = (t) => P + ((t - t0) / (t1 - t0)) * (W - 2 * P);
  const timeline = svg('svg', { class: 'chart', id: 'timeline', width: W, height: 70, viewBox: `0 0 ${W} 70`, role: 'img',
    'aria-label': 'Runs over time, coloured by outcome' },
  svg('line', { class: 'axis', x1: P, y1: 40, x2: W - P, y2: 40 }),
  svg('text', { x: P, y: 62 }, exact(t0)),
  svg('text', { x: W - P, y: 62, 'text-anchor': 'end' }, exact(t1)),
  ordered.map((r, i) => svg('rect', { class: `f-${r.state}`, x: x(times[i]) - 2, y: FAILING.has(r.state) ? 12 : 24,
    width: 4, height: FAILING.has(r.state) ? 28 : 16, 'data-state': r.state },
  svg('title', {}, `run ${r.id} ${r.state} ${r.scheduled_at || r.created_at}`))));
  const durations = ordered.map(runDuration);
  const top = Math.max(...durations, 1);
  const bw = Math.max(2, Math.min(14, (W - 2 * P) / Math.max(ordered.length, 1) - 1));
  const chart = svg('svg', { class: 'chart', id: 'durations', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'Run durations, oldest left' },
  svg('line', { class: 'axis', x1: P, y1: H - 16, x2: W - P, y2: H - 16 }),
  svg('text', { x: 2, y: 12 }, duration(top)),
  svg('text', { x: 2, y: H - 18 }, '0'),
  ordered.map((r, i) => {
    const h = Math.max(1, (durations[i] / top) * (H - 30));
    return svg('rect', { class: `f-${r.state}`, x: P + i * (bw + 1), y: H - 16 - h, width: bw, height: h },
      svg('title', {}, `run ${r.id}: ${duration(durations[i])} (${r.state})`));
  }));
  return [el('h2', {}, 'Timeline'), timeline, el('h2', {}, 'Duration'), chart];
}

// The applied job file, read at most every 30 s (it may be megabytes).
let jobFileCache = null;  // {at, file}
async function jobFile(signal) {
  if (jobFileCache && Date.now() - jobFileCache.at < 30000) return jobFileCache.file;
  const file = await api('/v1/jobfile', { signal });
  jobFileCache = { at: Date.now(), file };
  return file;
}

async function jobPage(name) {
  markNav('jobs');
  const signal = page.signal;
  const [job, runs] = await Promise.all([
    api(`/v1/jobs/${enc(name)}?fires=10`, { signal }),
    api(`/v1/runs?job=${enc(name)}&limit=200`, { signal }),
  ]);
  const zone = job.definition && job.definition.timezone;
  const actions = el('div', { class: 'row' });
  {
    const b = actionButton('Trigger', { id: 'trigger' }, 'trigger', name);
    b.onclick = () => act(b, `trigger ${name}`, `/v1/jobs/${enc(name)}/trigger`, {},
      (run) => { location.hash = `#/run/${run.id}`; });
    actions.append(b);
  }
  {
    const p = actionButton(job.paused ? 'Resume' : 'Pause', { id: job.paused ? 'resume' : 'pause' }, 'admin');
    p.onclick = () => act(p, `${job.paused ? 'resume' : 'pause'} ${name}`,
      `/v1/jobs/${enc(name)}/${job.paused ? 'resume' : 'pause'}`, {}, () => route());
    actions.append(p);
  }
  const text = job.flow ? flowText(job.flow) : definitionText(job.definition);
  const source = 'as the coordinator holds it';
  const fires = el('ol', { id: 'next-fires' }, (job.next_fires || []).map((f) =>
    el('li', {}, when(f, zone), el('span', { class: 'muted' }, `  ${f}`))));
  const table = el('table', { id: 'runs' },
    el('thead', {}, el('tr', {}, ['Run', 'State', 'Reason', 'Due', 'Duration', 'Hosts', 'Note'].map((h) => el('th', {}, h)))),
    el('tbody', {}, runs.slice(0, 50).map((r) => el('tr', { 'data-state': r.state },
      el('td', {}, el('a', { href: `#/run/${r.id}` }, String(r.id))),
      el('td', {}, badge(r.state)), el('td', {}, r.reason), el('td', {}, when(r.scheduled_at || r.created_at, zone)),
      el('td', {}, duration(runDuration(r))),
      el('td', {}, [...new Set((r.shards || []).map((s) => s.agent).filter(Boolean))].join(', ')),
      el('td', { class: 'wrap' }, r.note)))));
  const failed = runs.filter((r) => FAILING.has(r.state)).length;
  main.replaceChildren(
    el('h1', {}, job.name, '  ', job.paused ? badge('paused') : null, job.overdue ? badge('overdue') : null),
    el('p', { class: 'muted' }, job.description || (job.definition && job.definition.description) || ''),
    actions,
    el('div', { class: 'grid2' },
      el('div', {}, el('h2', {}, 'Definition ', el('span', { class: 'muted', id: 'definition-source' }, `(${source})`)),
        el('pre', { class: 'def', id: 'definition' }, text)),
      el('div', {}, el('h2', {}, (job.next_fires || []).length ? `Next ${job.next_fires.length} fires` :
        `Next fires: none${job.paused ? ' (paused)' : ''}`), fires,
        el('dl', { class: 'facts' },
          el('dt', {}, 'Last result'), el('dd', {}, job.last_state ? badge(job.last_state) : '-'),
          el('dt', {}, 'Last success'), el('dd', {}, when(job.last_success, zone)),
          el('dt', {}, `Failed of the last ${runs.length}`), el('dd', { id: 'failed-count' }, String(failed))))),
    ...(runs.length ? runCharts(runs) : [el('p', { class: 'muted' }, 'No runs yet.')]),
    el('h2', {}, 'Runs'), table,
    el('h2', {}, 'Misses'), el('div', { id: 'misses', class: 'muted' }, '…'),
    el('h2', {}, 'Notifications'), el('div', { id: 'notifications', class: 'muted' }, '…'));
  if (who.role === 'admin') {
    // An admin reads the applied file itself: the section exactly as written, once drawn.
    jobFile(signal).then((file) => {
      const section = sectionOf(file.text || '', name);
      if (!section) return;
      document.getElementById('definition').textContent = section;
      document.getElementById('definition-source').textContent = `(from revision ${file.revision} of the job file)`;
    }).catch(() => {});
  }
  api(`/v1/misses?job=${enc(name)}`, { signal }).then((misses) => {
    document.getElementById('misses').replaceChildren(misses.length ? el('table', {},
      el('tbody', {}, misses.map((m) => el('tr', {}, el('td', {}, when(m.first, zone)), el('td', {}, `${m.count} missed`),
        el('td', {}, m.reason))))) : 'None.');
  }).catch((e) => { if (e.name !== 'AbortError') document.getElementById('misses').textContent = e.message; });
  api(`/v1/notifications?job=${enc(name)}`, { signal }).then((out) => {
    const list = out.items || [];
    document.getElementById('notifications').replaceChildren(list.length ? el('table', {},
      el('tbody', {}, list.slice(0, 50).map((n) => el('tr', {}, el('td', {}, when(n.created)),
        el('td', {}, n.event), el('td', {}, n.target), el('td', {}, badge(n.state)),
        el('td', {}, n.run_id ? el('a', { href: `#/run/${n.run_id}` }, `run ${n.run_id}`) : null),
        el('td', { class: 'wrap' }, n.last_error))))) : 'None.');
  }).catch((e) => { if (e.name !== 'AbortError') document.getElementById('notifications').textContent = e.message; });
}

// -- a run --

// Terminal text made safe: SGR colours become classes, every other escape sequence is dropped;
// the text itself is only ever a text node.
const ESC_RE = /\x1b\[([0-9;]*)m|\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;
function ansiNodes(text, style) {
  const out = [];
  let last = 0;
  const push = (s) => {
    if (!s) return;
    const cls = [];
    if (style.bold) cls.push('a-bold');
    if (style.dim) cls.push('a-dim');
    if (style.italic) cls.push('a-italic');
    if (style.underline) cls.push('a-underline');
    if (style.fg != null) cls.push(`a-fg${style.fg}`);
    out.push(cls.length ? el('span', { class: cls.join(' ') }, s) : document.createTextNode(s));
  };
  for (const m of text.matchAll(ESC_RE)) {
    push(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1] === undefined) continue;
    for (const p of (m[1] || '0').split(';').map(Number)) {
      if (p === 0) { style.bold = style.dim = style.italic = style.underline = false; style.fg = null; }
      else if (p === 1) style.bold = true;
      else if (p === 2) style.dim = true;
      else if (p === 3) style.italic = true;
      else if (p === 4) style.underline = true;
      else if (p === 22) style.bold = style.dim = false;
      else if (p >= 30 && p <= 37) style.fg = p - 30;
      else if (p >= 90 && p <= 97) style.fg = p - 90;
      else if (p === 39) style.fg = null;
    }
  }
  push(text.slice(last));
  return out;
}

const MAX_LINES = 5000;  // of output kept in the page; the rest is in the raw download

function decodeBase64(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

// Resolves when the tab is shown again, or after 5 s.
function visibleOrLater() {
  return new Promise((resolve) => {
    if (!document.hidden) return resolve();
    const done = () => {
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', done);
      resolve();
    };
    const timer = setTimeout(done, 5000);
    document.addEventListener('visibilitychange', done);
  });
}

// Follows a run's output. It starts with the last MiB (a run's output may be hundreds of MB:
// only its tail is read, and "Load earlier output" reads a MiB more each time), then each read
// waits up to 25 s for more, until the run has ended and all of its output is in. A hidden
// tab asks without waiting, every 5 s: a waiting read holds one of the few connections a
// browser opens to the coordinator, which the tab in view needs.
async function followOutput(id, box, status, signal, multi) {
  const decoders = new Map();  // shard/attempt/stream -> TextDecoder
  const styles = new Map();
  let after = 0;
  let lines = 0;
  let dropped = 0;
  let bytes = 0;
  let limit = MAX_LINES;  // lines kept; each "Load earlier output" adds what it loaded
  const note = el('div', { class: 'marker', hidden: true });
  box.append(note);
  const earlier = el('button', { type: 'button', id: 'earlier', hidden: true }, 'Load earlier output');
  box.before(earlier);
  // Chunks as text nodes, each stream (shard, attempt, stdout or stderr) decoded in order
  // with its own decoder and colour state: the follower's, or a batch's own for earlier
  // output. Returns the nodes and their number of lines.
  const nodes = (chunks, dec, sty) => {
    const frag = document.createDocumentFragment();
    let n = 0;
    for (const ch of chunks) {
      const key = `${ch.shard}/${ch.attempt}/${ch.stream}`;
      if (!dec.has(key)) { dec.set(key, new TextDecoder('utf-8')); sty.set(key, {}); }
      const data = decodeBase64(ch.data);
      bytes += data.length;
      const text = ch.stream === 'marker' ? `${new TextDecoder().decode(data)}\n` :
        dec.get(key).decode(data, { stream: true });
      frag.append(el('span', { class: ch.stream, 'data-shard': ch.shard, 'data-id': ch.id },
        multi ? el('span', { class: 'shard' }, `[${ch.shard}] `) : null, ansiNodes(text, sty.get(key))));
      n += (text.match(/\n/g) || []).length;
    }
    return { frag, n };
  };
  earlier.onclick = async () => {
    earlier.disabled = true;
    try {
      // Before the oldest chunk in the page.
      const oldest = note.nextElementSibling;
      const p = await api(`/v1/runs/${id}/logs?before=${oldest ? oldest.dataset.id : 'end'}`, { signal });
      if (!p.chunks.length) {
        earlier.textContent = 'No earlier output';
        return;
      }
      note.hidden = true;
      const keep = box.scrollHeight - box.scrollTop;
      const got = nodes(p.chunks, new Map(), new Map());
      lines += got.n;
      limit += got.n;
      note.after(got.frag);
      box.scrollTop = box.scrollHeight - keep;
      earlier.disabled = false;
    } catch (e) {
      if (e.name !== 'AbortError') showError(`earlier output: ${e.message}`);
      earlier.disabled = false;
    }
  };
  let tail = true;
  for (;;) {
    let pageOut;
    try {
      const wait = document.hidden ? 0 : 25000;
      pageOut = await api(tail ? `/v1/runs/${id}/logs?before=end` :
        `/v1/runs/${id}/logs?after=${after}&wait_ms=${wait}`, { signal });
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e.status === 401) return login(e.message);
      if (e.status >= 400 && e.status < 500) {
        status.textContent = `output: ${e.message}`;  // asking again would get the same
        return;
      }
      status.textContent = `output: ${e.message}; trying again`;
      await new Promise((r) => setTimeout(r, 2000));
      if (signal.aborted) return;
      continue;
    }
    const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 20;
    const got = nodes(pageOut.chunks, decoders, styles);
    lines += got.n;
    box.append(got.frag);
    if (tail) {
      // A tail read returns at most 1 MiB or 1,000 chunks: there may be more before it.
      const read = pageOut.chunks.reduce((n, ch) => n + Math.floor(ch.data.length * 3 / 4), 0);
      earlier.hidden = !(read >= 1000000 || pageOut.chunks.length >= 1000);
    }
    tail = false;
    // Only the tail stays in the page, so a long output never slows it down.
    while (lines > limit && box.childNodes.length > 2) {
      const gone = box.childNodes[1];
      lines -= (gone.textContent.match(/\n/g) || []).length;
      dropped++;
      gone.remove();
      earlier.hidden = false;
    }
    if (dropped) {
      dropped = 0;
      note.hidden = false;
      note.textContent = 'Earlier output is not shown here: load it, or download the raw log.\n';
    }
    if (stick) box.scrollTop = box.scrollHeight;
    after = pageOut.next;
    box.dataset.bytes = String(bytes);
    if (pageOut.pruned) { status.textContent = `output deleted by retention: ${pageOut.pruned}`; break; }
    if (pageOut.done) { status.textContent = 'output complete'; break; }
    status.textContent = 'following output';
    if (!pageOut.chunks.length) await visibleOrLater();
    if (signal.aborted) return;
  }
  box.dataset.done = 'true';
}

// All of a run's output, each stream's bytes as they are, as a file the browser saves.
async function downloadRaw(id, button) {
  button.disabled = true;
  const parts = [];
  let after = 0;
  try {
    for (;;) {
      const p = await api(`/v1/runs/${id}/logs?after=${after}`);
      for (const ch of p.chunks) if (ch.stream !== 'marker') parts.push(decodeBase64(ch.data));
      if (!p.chunks.length) break;
      after = p.next;
      button.textContent = `Downloading… ${parts.length} chunks`;
    }
    const url = URL.createObjectURL(new Blob(parts, { type: 'application/octet-stream' }));
    const a = el('a', { href: url, download: `run-${id}.log` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (e) {
    showError(`download: ${e.message}`);
  } finally {
    button.disabled = false;
    button.textContent = 'Download raw log';
  }
}

function shardRows(run) {
  return el('tbody', {}, (run.shards || []).map((s) => el('tr', {},
    el('td', {}, String(s.index)), el('td', {}, s.agent || '-'), el('td', {}, String(s.attempt)),
    el('td', {}, badge(s.state)), el('td', {}, s.exit_code == null ? '-' : String(s.exit_code)),
    el('td', {}, s.outcome || '-'), el('td', {}, when(s.started_at)),
    el('td', {}, s.started_at ? duration((s.finished_at ? ms(s.finished_at) : Date.now()) - ms(s.started_at)) : '-'),
    el('td', { class: 'peak-mem', title: 'peak memory, as agentd measured it: its cgroup\'s memory.peak where it has one, else the largest resident set one of its processes reached (never below agentd\'s own peak)' }, bytes(s.peak_rss_bytes)),
    el('td', { class: 'cpu' }, s.cpu_ms == null ? '-' : duration(s.cpu_ms)),
    el('td', { class: 'wrap' }, s.message))));
}

async function runPage(id) {
  markNav('jobs');
  const signal = page.signal;
  const run = await api(`/v1/runs/${id}`, { signal });
  const open = !run.finished_at;
  const actions = el('div', { class: 'row' });
  if (open) {
    const b = actionButton('Cancel', { id: 'cancel', class: 'danger' }, 'admin');
    b.onclick = () => act(b, `cancel run ${id}`, `/v1/runs/${id}/cancel`, {}, () => route());
    actions.append(b);
  }
  if (!open) {
    const b = actionButton('Retry', { id: 'retry' }, 'admin');
    b.onclick = () => act(b, `retry run ${id}`, `/v1/runs/${id}/retry`, {}, (r) => { location.hash = `#/run/${r.id}`; });
    actions.append(b);
  }
  const raw = el('button', { type: 'button', id: 'download' }, 'Download raw log');
  raw.onclick = () => downloadRaw(id, raw);
  actions.append(raw);
  const shards = el('table', { id: 'shards' },
    el('thead', {}, el('tr', {}, ['Shard', 'Host', 'Attempt', 'State', 'Exit', 'Outcome', 'Started', 'Duration', 'Peak memory', 'CPU', 'Message']
      .map((h) => el('th', {}, h)))), shardRows(run));
  const steps = run.steps ? [el('h2', {}, 'Steps'), el('table', { id: 'steps' },
    el('thead', {}, el('tr', {}, ['Step', 'State', 'Run', 'Needs', 'Hosts', 'Note'].map((h) => el('th', {}, h)))),
    el('tbody', {}, run.steps.map((s) => el('tr', {}, el('td', {}, s.name), el('td', {}, badge(s.state)),
      el('td', {}, s.run ? el('a', { href: `#/run/${s.run}` }, String(s.run)) : '-'),
      el('td', {}, (s.needs || []).join(', ')), el('td', {}, (s.hosts || []).join(', ')),
      el('td', { class: 'wrap' }, s.note)))))] : [];
  const status = el('div', { class: 'muted', id: 'output-status' }, '');
  const box = el('pre', { class: 'output', id: 'output', tabindex: 0, 'aria-label': 'Output' });
  main.replaceChildren(
    el('h1', {}, `Run ${run.id} of `, el('a', { href: `#/job/${enc(run.job)}` }, run.job), '  ', badge(run.state)),
    el('dl', { class: 'facts' },
      el('dt', {}, 'Reason'), el('dd', {}, run.reason),
      el('dt', {}, 'Due'), el('dd', {}, when(run.scheduled_at || run.created_at)),
      el('dt', {}, 'Finished'), el('dd', {}, when(run.finished_at)),
      el('dt', {}, 'Duration'), el('dd', {}, duration(runDuration(run))),
      el('dt', {}, 'Trace'), el('dd', {}, el('code', {}, run.trace_id || '-')),
      run.note ? [el('dt', {}, 'Note'), el('dd', {}, run.note)] : null,
      run.flow_run ? [el('dt', {}, 'Flow run'), el('dd', {}, el('a', { href: `#/run/${run.flow_run}` }, String(run.flow_run)))] : null),
    actions,
    el('h2', {}, 'Shards'), shards, ...steps,
    el('h2', {}, 'Output'), status, box);
  if (!run.steps) {
    followOutput(id, box, status, signal, (run.shard_total || 1) > 1).then(() => {
      // The run's final state once its output is in.
      if (open && !signal.aborted) route();
    });
  } else {
    status.textContent = 'A flow run has no output of its own: each step\'s run has its output.';
  }
  if (open) {
    // Shards' states while the output is followed.
    const tick = async () => {
      if (signal.aborted) return;
      try {
        const r = await api(`/v1/runs/${id}`, { signal });
        const table = document.getElementById('shards');
        if (table && !signal.aborted) table.tBodies[0].replaceWith(shardRows(r));
        // A run's page is drawn again once its output is in (above); a flow run's at its end.
        if (r.finished_at) { if (run.steps) route(); return; }
      } catch (e) { return; }
      setTimeout(tick, 3000);
    };
    setTimeout(tick, 3000);
  }
}

// -- the fleet --

async function fleetPage() {
  markNav('fleet');
  const signal = page.signal;
  const agents = await api('/v1/agents', { signal });
  const table = el('table', { id: 'agents' },
    el('thead', {}, el('tr', {}, ['Agent', 'Labels', 'Slots used / free', 'Last seen', 'Version', 'State', '']
      .map((h) => el('th', {}, h)))),
    el('tbody', {}, agents.map((a) => {
      const actions = el('td', {});
      if (!a.draining) {
        const b = actionButton('Drain', { class: 'drain', 'data-agent': a.name }, 'admin');
        b.onclick = () => act(b, `drain ${a.name}`, `/v1/agents/${enc(a.name)}/drain`, {}, () => route());
        actions.append(b);
      }
      return el('tr', { 'data-agent': a.name },
        el('td', {}, a.name), el('td', { class: 'wrap' }, Object.entries(a.labels || {}).map(([k, v]) => `${k}=${v}`).join(', ')),
        el('td', {}, `${a.running} / ${Math.max(0, a.slots - a.running)}`), el('td', {}, when(a.last_seen)),
        el('td', {}, a.version), el('td', {}, a.draining ? badge('draining') : a.connected ? badge('connected') : badge('gone')),
        actions);
    })));
  const since = new Date(Date.now() - 3600000).toISOString();
  main.replaceChildren(el('h1', {}, 'Fleet'), el('h2', {}, 'The last hour, per host'),
    el('div', { id: 'fleet-timeline', class: 'muted' }, '…'), el('h2', {}, 'Agents'), table);
  let runs;
  try {
    runs = await api(`/v1/runs?since=${enc(since)}&limit=10000`, { signal });
  } catch (e) {
    if (e.name === 'AbortError') return;
    document.getElementById('fleet-timeline').textContent = `The timeline needs a token that reads every job: ${e.message}`;
    return;
  }
  document.getElementById('fleet-timeline').replaceChildren(hostTimeline(runs, agents));
}

function hostTimeline(runs, agents) {
  const hosts = [...new Set([...agents.map((a) => a.name),
    ...runs.flatMap((r) => (r.shards || []).map((s) => s.agent).filter(Boolean))])].sort();
  if (!hosts.length) return el('span', {}, 'No agents.');
  const now = Date.now(), t0 = now - 3600000;
  const W = chartWidth(), L = 140, RH = 22, H = hosts.length * RH + 24;
  const x = (t) => L + ((Math.max(t, t0) - t0) / 3600000) * (W - L - 8);
  const marks = [];
  for (const r of runs) {
    for (const s of r.shards || []) {
      if (!s.agent || !s.started_at) continue;
      const a = ms(s.started_at), b = s.finished_at ? ms(s.finished_at) : now;
      if (b < t0) continue;
      const row = hosts.indexOf(s.agent);
      marks.push(svg('rect', { class: `f-${s.state}`, x: x(a), y: row * RH + 4, width: Math.max(2, x(b) - x(a)),
        height: RH - 8, 'data-run': r.id },
      svg('title', {}, `${r.job} run ${r.id} shard ${s.index}: ${s.state}, ${duration(b - a)}, ${exact(a)}`)));
    }
  }
  const ticks = [];
  for (let m = 0; m <= 60; m += 10) {
    const tx = L + (m / 60) * (W - L - 8);
    ticks.push(svg('line', { class: 'axis', x1: tx, y1: 0, x2: tx, y2: H - 20 }),
      svg('text', { x: tx, y: H - 6, 'text-anchor': 'middle' }, m === 60 ? 'now' : `-${60 - m} min`));
  }
  return svg('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'Runs per host over the last hour' },
    ticks, hosts.map((h, i) => svg('text', { x: 4, y: i * RH + 15 }, h)), marks);
}

// ---- routing ----

async function route() {
  page.abort();
  page = new AbortController();
  stripQueue.length = 0;
  stripCells.clear();
  if (!token) return login();
  const path = location.hash.replace(/^#/, '').split('&')[0] || '/jobs';
  try {
    let m;
    if ((m = path.match(/^\/job\/(.+)$/))) await jobPage(decodeURIComponent(m[1]));
    else if ((m = path.match(/^\/run\/(\d+)$/))) await runPage(Number(m[1]));
    else if (path === '/fleet') await fleetPage();
    else await jobsPage();
    document.body.dataset.page = path;
  } catch (e) {
    if (e.name === 'AbortError') return;
    if (e.status === 401) return login(e.message);
    main.replaceChildren(el('h1', {}, 'Cannot show this page'), el('p', { class: 's-failed', role: 'alert' }, e.message));
  }
}

async function start() {
  clearBanner();
  if (!token) return login();  // nothing to ask with, and nothing refused yet
  const tried = token;
  let me;
  try {
    me = await api('/v1/whoami');
  } catch (e) {
    if (token && token !== tried) return;  // another token was pasted meanwhile: its start() goes on
    return login(e.status === 401 ? 'That token was refused.' : e.message);
  }
  if (token !== tried) return;  // likewise
  who = me;
  document.getElementById('who').textContent =
    `${who.name} (${who.role}${who.jobs ? `, jobs ${who.jobs}` : ''})`;
  document.body.dataset.role = who.role;
  await route();
}

function setTheme(t) {
  document.documentElement.dataset.theme = t;
  localStorage.setItem('jobctl.theme', t);
}

document.getElementById('theme').onclick = () =>
  setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
document.getElementById('forget').onclick = () => {
  sessionStorage.removeItem(TOKEN_KEY);
  token = '';
  who = null;
  login();
};
document.addEventListener('keydown', (e) => {
  const f = document.getElementById('filter');
  const typing = ['INPUT', 'TEXTAREA'].includes(document.activeElement?.tagName);
  if (e.key === '/' && f && !typing) { e.preventDefault(); f.focus(); }
});
window.addEventListener('hashchange', () => {
  const before = token;
  takeTokenFromFragment();
  clearBanner();
  // A link with another token: whose it is is asked again.
  if (who && token === before) route(); else start();
});

setTheme(localStorage.getItem('jobctl.theme') ||
  (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
takeTokenFromFragment();
start();
