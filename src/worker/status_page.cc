#include "worker/status_page.h"

#include <nlohmann/json.hpp>

#include "ufs/http/xml.h"

namespace shoal {
namespace {

// The page around the document. Everything it draws comes from the document
// (id "doc") and then from /v1/cluster/status; data is written as text only.
constexpr std::string_view kHead = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Shoal status: )html";

constexpr std::string_view kBody = R"html(</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #1b1f24; background: #f6f8fa; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
h2 { font-size: 1.1em; margin: 1.4em 0 .5em; }
#updated { color: #57606a; margin-bottom: 1em; }
#updated.failed { color: #b42318; font-weight: 600; }
#summary { display: flex; flex-wrap: wrap; gap: .7em; margin-bottom: 1.2em; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .6em .9em; min-width: 10em; }
.card .label { color: #57606a; font-size: .85em; }
.card .value { font-size: 1.25em; font-weight: 600; }
.card .note { color: #57606a; font-size: .8em; }
table { border-collapse: collapse; background: #fff; border: 1px solid #d0d7de; }
th, td { padding: .35em .7em; border-bottom: 1px solid #eaeef2; text-align: right; white-space: nowrap; }
th { background: #f0f3f6; font-weight: 600; }
td.text, th.text { text-align: left; }
td.wrap { white-space: normal; min-width: 8em; max-width: 30em; }
div.dir { font-size: 85%; color: #57606a; }
tr.down td { color: #b42318; }
.bar { display: inline-block; width: 6em; height: .6em; background: #eaeef2; border-radius: 3px; margin-right: .4em; }
.bar span { display: block; height: 100%; background: #2f81f7; border-radius: 3px; }
canvas { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; margin-bottom: 1.2em; }
.legend { color: #57606a; font-size: .85em; margin: -0.8em 0 1.2em; }
.swatch { display: inline-block; width: .8em; height: .8em; margin: 0 .3em 0 1em; vertical-align: middle; }
</style>
</head>
<body>
<h1>Shoal cluster, as seen by <span id="self">)html";

constexpr std::string_view kDoc = R"html(</span></h1>
<div id="updated"></div>
<div id="summary"></div>
<canvas id="chart" width="900" height="180"></canvas>
<div class="legend"><span class="swatch" style="background:#2f81f7"></span>hit ratio (0-100%)
<span class="swatch" style="background:#1a7f37"></span>bytes served per second (scale: <span id="peak">-</span>)</div>
<table id="workers">
<thead><tr><th class="text">Worker</th><th class="text">State</th><th>Ring share</th><th>Cache used / capacity</th>
<th>Hit ratio</th><th>Read from stores</th><th>Pinned</th><th>Write-back queue</th><th>Hot shards</th>
<th class="text">TLS</th><th class="text">ID</th></tr></thead>
<tbody></tbody>
</table>
<h2>Egress saved by mount</h2>
<table id="mounts">
<thead><tr><th class="text">Mount</th><th class="text">Store</th><th>Bytes not read from the store</th>
<th>Price per GB</th><th>Saved</th></tr></thead>
<tbody></tbody>
</table>
<h2>Load jobs</h2>
<table id="loads">
<thead><tr><th class="text">Job</th><th class="text">Path</th><th class="text">State</th><th>Files</th>
<th>Bytes</th><th>Workers</th></tr></thead>
<tbody></tbody>
</table>
<h2>Recent errors</h2>
<table id="errors">
<thead><tr><th class="text">Worker</th><th class="text">Error (newest first)</th></tr></thead>
<tbody></tbody>
</table>
<script type="application/json" id="doc">)html";

constexpr std::string_view kScript = R"html(</script>
<script>
'use strict';
const REFRESH_MS = 3000;
const KEEP = 200;  // samples: 10 minutes at one per 3 s
const samples = [];
let doc = JSON.parse(document.getElementById('doc').textContent);

function size(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = Number(b) || 0, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v.toFixed(0)) + ' ' + units[i];
}
function pct(x) { return (100 * (Number(x) || 0)).toFixed(1) + '%'; }
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function card(key, label, value, note) {
  const c = el('div', undefined, 'card');
  c.dataset.key = key;
  c.append(el('div', label, 'label'), el('div', value, 'value'));
  if (note) c.append(el('div', note, 'note'));
  return c;
}
function bar(used, capacity) {
  const b = el('span', undefined, 'bar');
  const fill = el('span');
  fill.style.width = Math.min(100, capacity ? 100 * used / capacity : 0).toFixed(1) + '%';
  b.append(fill);
  return b;
}
function age(seconds) {
  const s = Number(seconds) || 0;
  return s < 90 ? s.toFixed(0) + ' s' : s < 5400 ? (s / 60).toFixed(0) + ' min' : (s / 3600).toFixed(1) + ' h';
}

function render(d, failure) {
  const updated = document.getElementById('updated');
  updated.textContent = failure ? 'refresh failed (showing the last answer): ' + failure
                                : 'updated ' + new Date().toLocaleTimeString() + ', every ' + REFRESH_MS / 1000 + ' s';
  updated.className = failure ? 'failed' : '';
  const s = d.summary, r = d.ring;
  document.getElementById('summary').replaceChildren(
    card('workers', 'Workers', s.up + ' up, ' + s.down + ' down'),
    card('ring', 'Ring', r.membership + ', version ' + r.version, r.members.length + ' members'),
    card('cache', 'Cache used', size(s.cache_used_bytes) + ' / ' + size(s.cache_capacity_bytes),
         pct(s.cache_capacity_bytes ? s.cache_used_bytes / s.cache_capacity_bytes : 0) + ' full'),
    card('hit_ratio', 'Hit ratio', pct(s.hit_ratio), size(s.hit_bytes) + ' hit, ' + size(s.miss_bytes) + ' missed'),
    card('egress_saved', 'Egress saved', size(s.egress_saved_bytes),
         '$' + Number(s.egress_saved_usd).toFixed(2) + ' saved (by mount below)'),
    card('ufs_read', 'Read from stores', size(s.ufs_read_bytes)),
    card('pinned', 'Pinned', size(s.pinned_bytes)),
    card('write_back', 'Write-back queue', s.write_back_pending_files + ' files',
         size(s.write_back_pending_bytes)));
  const rows = [];
  for (const w of d.workers) {
    const tr = el('tr', undefined, w.up ? '' : 'down');
    tr.dataset.address = w.address;
    const state = w.up ? 'up' : 'down' + (w.error ? ': ' + w.error.replace(/^down: /, '') : '');
    const cache = el('td');
    cache.append(bar(w.cache_used_bytes, w.cache_effective_capacity_bytes),
                 size(w.cache_used_bytes) + ' / ' + size(w.cache_effective_capacity_bytes));
    if ((w.cache_dirs || []).length > 1) {
      for (const dir of w.cache_dirs) {
        const line = el('div', dir.path + ': ' + size(dir.used_bytes) + ' / ' + size(dir.effective_capacity_bytes), 'dir');
        line.dataset.dir = dir.path;
        cache.append(line);
      }
    }
    let tls = 'off';
    if (w.tls) {
      const days = Math.floor((w.tls_not_after * 1000 - Date.now()) / 86400000);
      tls = 'on, expires in ' + days + ' days' + (days < 14 ? ' (renew it)' : '');
    }
    const wb = w.write_back_pending_files ? w.write_back_pending_files + ' files, ' + size(w.write_back_pending_bytes) +
                                                ', oldest ' + age(w.write_back_oldest_pending_seconds)
                                          : 'empty';
    tr.append(el('td', w.address, 'text'), el('td', state, 'text wrap'), el('td', pct(w.ring_share)), cache,
              el('td', pct(w.hit_ratio)), el('td', size(w.ufs_read_bytes)), el('td', size(w.pinned_bytes || 0)),
              el('td', wb), el('td', (w.hot_shards || []).join(', ') || 'none', 'text wrap'), el('td', tls, 'text'), el('td', w.id, 'text'));
    rows.push(tr);
  }
  document.querySelector('#workers tbody').replaceChildren(...rows);
  const mounts = [];
  for (const m of d.mounts || []) {
    const tr = el('tr');
    tr.dataset.mount = m.mount;
    tr.append(el('td', m.mount, 'text'), el('td', m.ufs, 'text'), el('td', size(m.saved_bytes)),
              el('td', '$' + Number(m.price_per_gb).toFixed(3)), el('td', '$' + Number(m.saved_usd).toFixed(2)));
    mounts.push(tr);
  }
  document.querySelector('#mounts tbody').replaceChildren(...mounts);
  const jobs = [];
  for (const j of d.loads || []) {
    const tr = el('tr');
    tr.dataset.job = j.id;
    const bytes = el('td');
    bytes.append(bar(j.bytes_done, j.bytes_total), size(j.bytes_done) + ' / ' + size(j.bytes_total));
    tr.append(el('td', j.id, 'text'), el('td', j.path, 'text'), el('td', j.state, 'text'),
              el('td', j.files_done + ' / ' + j.files_total + (j.files_failed ? ' (' + j.files_failed + ' failed)' : '')),
              bytes, el('td', j.workers));
    jobs.push(tr);
  }
  if (!jobs.length) {
    const td = el('td', 'none', 'text');
    td.colSpan = 6;
    const tr = el('tr');
    tr.append(td);
    jobs.push(tr);
  }
  document.querySelector('#loads tbody').replaceChildren(...jobs);
  const errors = [];
  for (const w of d.workers) {
    for (const text of w.recent_errors || []) errors.push({worker: w.address, text: text});
  }
  errors.sort((a, b) => (a.text < b.text ? 1 : a.text > b.text ? -1 : 0));  // ISO times first: newest first
  const erows = errors.slice(0, 20).map(e => {
    const tr = el('tr');
    tr.append(el('td', e.worker, 'text'), el('td', e.text, 'text wrap'));
    return tr;
  });
  if (!erows.length) {
    const td = el('td', 'none', 'text');
    td.colSpan = 2;
    const tr = el('tr');
    tr.append(td);
    erows.push(tr);
  }
  document.querySelector('#errors tbody').replaceChildren(...erows);
}

function sample(d) {
  samples.push({t: Date.now(), hit: d.summary.hit_bytes, miss: d.summary.miss_bytes});
  if (samples.length > KEEP) samples.shift();
  draw();
}

// Hit ratio and bytes served per interval between two refreshes.
function draw() {
  const canvas = document.getElementById('chart');
  const g = canvas.getContext('2d');
  g.clearRect(0, 0, canvas.width, canvas.height);
  const points = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    const hit = Math.max(0, b.hit - a.hit), miss = Math.max(0, b.miss - a.miss);
    const dt = Math.max(1, b.t - a.t) / 1000;
    points.push({ratio: hit + miss ? hit / (hit + miss) : null, rate: (hit + miss) / dt});
  }
  const peak = Math.max(1, ...points.map(p => p.rate));
  document.getElementById('peak').textContent = 'top = ' + size(peak) + '/s';
  const w = canvas.width, h = canvas.height, pad = 6;
  const x = i => pad + (w - 2 * pad) * (KEEP - 1 - (points.length - 1 - i)) / (KEEP - 1);
  const y = v => h - pad - (h - 2 * pad) * v;
  function line(color, value) {
    g.strokeStyle = color;
    g.lineWidth = 2;
    g.beginPath();
    let open = false;
    points.forEach((p, i) => {
      const v = value(p);
      if (v === null) { open = false; return; }
      if (open) g.lineTo(x(i), y(v)); else g.moveTo(x(i), y(v));
      open = true;
    });
    g.stroke();
  }
  line('#1a7f37', p => p.rate / peak);
  line('#2f81f7', p => p.ratio);
}

async function refresh() {
  try {
    const answer = await fetch('/v1/cluster/status', {cache: 'no-store'});
    if (!answer.ok) throw new Error(answer.status + ' ' + (await answer.text()).slice(0, 300));
    doc = await answer.json();
    render(doc);
    sample(doc);
  } catch (e) {
    render(doc, e.message);
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

render(doc);
sample(doc);
setTimeout(refresh, REFRESH_MS);
</script>
</body>
</html>
)html";

}  // namespace

std::string JsonForScript(const nlohmann::json& doc) {
  // Invalid UTF-8 from a worker's error text is replaced, not thrown on.
  const std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 16);
  // '<', '>' and '&' appear in JSON only inside strings, where \uXXXX means the same.
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string StatusPageHtml(const nlohmann::json& doc, std::string_view self) {
  const std::string me = XmlEscape(self);
  std::string page;
  page.reserve(16384);
  page.append(kHead).append(me).append(kBody).append(me).append(kDoc);
  page.append(JsonForScript(doc));
  page.append(kScript);
  return page;
}

}  // namespace shoal
