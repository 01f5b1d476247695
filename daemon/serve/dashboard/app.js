// The dashboard's script (served as /app.js): renders the three pages from the
// JSON API and polls it for live updates. Every string from the store (what
// the LLM or a child process wrote) goes into the DOM as text, never as markup:
// nothing here parses a string as HTML.
'use strict';

const POLL_MS = 2000;

const STATE_COLOURS = {
  kept: '#2e7d32', discarded: '#9e9e9e', crash: '#c62828', timeout: '#ef6c00', build_fail: '#ad1457',
  tampered: '#6a1b9a', patch_rejected: '#5d4037', proposer_error: '#37474f', interrupted: '#90a4ae',
  duplicate: '#8d6e63',
};
const OTHER_COLOUR = '#1565c0';  // a status without a colour of its own
const BEST_COLOUR = '#1b5e20';   // the best-so-far line: darker than the kept points
const BAND_COLOUR = 'rgba(46,125,50,0.15)';

function $(selector) { return document.querySelector(selector); }

/// An element with attributes and children (strings become text nodes).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

async function getJSON(url) {
  const r = await fetch(url, { credentials: 'same-origin' });
  const doc = await r.json();
  if (!r.ok) throw new Error(doc.error || r.statusText);
  return doc;
}

async function postAction(url, body) {
  const r = await fetch(url, {
    method: 'POST', credentials: 'same-origin', body: body || '',
    headers: { 'X-Autoresearchd-Action': '1', 'Content-Type': 'text/plain; charset=utf-8' },
  });
  const doc = await r.json();
  if (!r.ok) throw new Error(doc.error || r.statusText);
  return doc.result;
}

function showError(e) {
  const p = $('#error');
  if (!e) { p.hidden = true; return; }
  p.hidden = false;
  p.textContent = String(e.message || e);
}

const fixed = (v, digits) => (v === null || v === undefined ? '-' : Number(v).toFixed(digits));
const clock = (t) => (t ? new Date(t * 1000).toLocaleString() : '-');

function duration(s) {
  if (s === null || s === undefined) return '-';
  if (s < 60) return s.toFixed(1) + 's';
  const t = Math.round(s);
  if (t < 3600) return Math.floor(t / 60) + 'm' + String(t % 60).padStart(2, '0') + 's';
  return Math.floor(t / 3600) + 'h' + String(Math.floor((t % 3600) / 60)).padStart(2, '0') + 'm';
}

/// Runs step() now and every POLL_MS after it finishes, showing failures.
function poll(step) {
  const run = async () => {
    try { await step(); showError(null); } catch (e) { showError(e); }
    setTimeout(run, POLL_MS);
  };
  run();
}

// ---- overview ----------------------------------------------------------

const overview = {
  rows: new Map(),   // id -> experiment summary
  status: null,
  byTime: false,
  chart: null,
};

/// The metric's name (summary.metric) and whether a higher value is better
/// (summary.goal = "max"); val_bpb, lower is better, until the status is read.
function metricName(s) { return s && s.metric ? s.metric.name : 'val_bpb'; }
function higherIsBetter(s) { return Boolean(s && s.metric && s.metric.goal === 'max'); }

function figure(label, value) { return el('div', { class: 'figure' }, label, el('b', {}, value)); }

function renderFigures(s) {
  const f = s.figures;
  $('#daemon').textContent = s.daemon.running ? 'daemon running (pid ' + s.daemon.pid + ')' : 'daemon not running';
  $('#figures').replaceChildren(
    figure('best ' + metricName(s), s.best ? fixed(s.best.val_bpb, 6) + ' (#' + s.best.id + ')' : 'none yet'),
    figure('experiments', f.finished + ' finished'),
    figure('per hour', fixed(f.per_hour, 1)),
    figure('GPU busy share', f.gpu_busy_share === null ? '-' : fixed(100 * f.gpu_busy_share, 1) + '% of ' + f.gpus),
    figure('training share', fixed(100 * f.training_share, 1) + '%' + (f.training_share_clamped ? ' (clamped)' : '')),
    figure('LLM spend', '$' + fixed(s.llm.cost_usd, 4) + ' (' + s.llm.calls + ' calls)'),
    figure('noise σ', s.noise.usable ? fixed(s.noise.sigma, 6) + ' (' + (s.noise.source === 'prior'
      ? 'prior' : 'df ' + s.noise.df) + ')' : 'not usable yet'),
  );
  $('#noise').textContent = 'noise: ' + s.noise.line;
  $('#actions').hidden = !(s.allow_actions && s.daemon.running);
}

function renderLanes(s) {
  const lanes = s.lanes.map((lane) => {
    const items = lane.experiments.map((x) => {
      const what = '#' + x.id + ' ' + x.state + (x.stage ? ' (' + x.stage + ')' : '');
      // A bar and an expected end only for a stage under way with an estimate of its own.
      const parts = [el('a', { href: '/experiment/' + x.id }, what), ' '];
      if (x.progress !== null) parts.push(el('progress', { max: '1', value: String(x.progress) }), ' ');
      if (x.stage_expected) parts.push('expected end ' + new Date(x.stage_expected * 1000).toLocaleTimeString(), ' ');
      return el('span', {}, ...parts, x.description);
    });
    return el('div', { class: 'lane', 'data-gpu': lane.gpu }, el('span', { class: 'gpu' }, 'GPU ' + lane.gpu), ...items);
  });
  if (!lanes.length) lanes.push(el('p', {}, s.daemon.running ? (s.data_step || 'idle') : 'nothing runs'));
  else if (!s.daemon.running) lanes.unshift(el('p', {}, 'the daemon is not running: this is where it stopped'));
  $('#lanes').replaceChildren(...lanes);
}

function renderTable() {
  const rows = [...overview.rows.values()].sort((a, b) => a.id - b.id);
  const now = overview.status ? overview.status.now : Date.now() / 1000;
  $('#experiments tbody').replaceChildren(...rows.map((r) => el('tr', { 'data-id': r.id },
    el('td', { class: 'num' }, el('a', { href: '/experiment/' + r.id }, String(r.id))),
    el('td', {}, r.commit ? r.commit.slice(0, 7) : '-'),
    el('td', { class: 'num' }, fixed(r.val_bpb, 6)),
    el('td', { class: 'state-' + r.state }, r.state),
    el('td', {}, r.gpu === null ? '-' : r.gpu),
    el('td', { class: 'num' }, duration((r.ended_at || now) - r.started_at)),
    el('td', {}, (r.fix_of !== null ? '(fix of #' + r.fix_of + ') ' : '') + r.description))));
}

/// The chart's datasets: the experiments with a value as points, one dataset
/// (so one legend swatch) per status in its colour, the kept ones as the
/// best-so-far step line, and the noise band around it when the API knows sigma.
function chartData() {
  const rows = [...overview.rows.values()].sort((a, b) => a.id - b.id);
  const t0 = rows.length ? rows[0].started_at : 0;
  const x = (r) => (overview.byTime ? (r.started_at - t0) / 3600 : r.id);
  const points = rows.filter((r) => r.val_bpb !== null)
    .map((r) => ({ x: x(r), y: r.val_bpb, id: r.id, state: r.state }));
  const best = [];
  const higher = higherIsBetter(overview.status);
  const better = (v, than) => (higher ? v > than : v < than);
  for (const r of rows) {
    if (r.state !== 'kept' || r.val_bpb === null) continue;
    if (!best.length || better(r.val_bpb, best[best.length - 1].y)) best.push({ x: x(r), y: r.val_bpb, id: r.id });
  }
  if (best.length && rows.length) best.push({ x: x(rows[rows.length - 1]), y: best[best.length - 1].y, id: null });
  const states = [...new Set(points.map((p) => p.state))];
  const datasets = states.map((state) => {
    const colour = STATE_COLOURS[state] || OTHER_COLOUR;
    return { type: 'scatter', label: state, kind: 'points', data: points.filter((p) => p.state === state),
      pointStyle: 'circle', pointRadius: 4, backgroundColor: colour, borderColor: colour };
  });
  datasets.push({ type: 'line', label: 'best so far', kind: 'best', data: best, stepped: 'after',
    borderColor: BEST_COLOUR, backgroundColor: BEST_COLOUR, pointStyle: 'line', pointRadius: 0, borderWidth: 2 });
  const sigma = overview.status ? overview.status.sigma : null;
  if (sigma !== null && sigma !== undefined) {
    const band = (d) => best.map((p) => ({ x: p.x, y: p.y + d }));
    datasets.push({ type: 'line', label: '+σ', kind: 'band-edge', data: band(sigma), stepped: 'after', pointRadius: 0,
      borderWidth: 0 });
    datasets.push({ type: 'line', label: 'best ± σ', kind: 'band', data: band(-sigma), stepped: 'after', pointRadius: 0,
      borderWidth: 0, pointStyle: 'rect', fill: '-1', backgroundColor: BAND_COLOUR, borderColor: BAND_COLOUR });
  }
  return { datasets };
}

function renderChart() {
  const canvas = $('#progress');
  const data = chartData();
  const xTitle = overview.byTime ? 'hours since the first experiment' : 'experiment';
  const xPrecision = overview.byTime ? 2 : 0;  // experiment numbers are whole
  const yTitle = metricName(overview.status) + (higherIsBetter(overview.status) ? ' (higher is better)'
    : ' (lower is better)');
  if (typeof Chart === 'undefined') {
    showError('Chart.js did not load');
  } else if (!overview.chart) {
    overview.chart = new Chart(canvas, {
      data,
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: true,
        scales: { x: { type: 'linear', title: { display: true, text: xTitle }, ticks: { precision: xPrecision } },
                  y: { title: { display: true, text: yTitle } } },
        plugins: { legend: { display: true,
                             // one swatch per kind: each status's points, the line, the band (its upper edge left out)
                             labels: { usePointStyle: true, boxHeight: 7, filter: (item, chartData) =>
                               chartData.datasets[item.datasetIndex].kind !== 'band-edge' } },
                   tooltip: { callbacks: { label: (c) => (c.raw.id ? '#' + c.raw.id + ' ' : '') + c.raw.y.toFixed(6) } } },
      },
    });
  } else {
    overview.chart.data = data;
    overview.chart.options.scales.x.title.text = xTitle;
    overview.chart.options.scales.x.ticks.precision = xPrecision;
    overview.chart.options.scales.y.title.text = yTitle;
    overview.chart.update();
  }
  // What the chart draws, readable from the DOM (tests, scripts).
  const drawn = overview.chart ? overview.chart.data.datasets : data.datasets;
  const drawnPoints = drawn.filter((d) => d.kind === 'points').flatMap((d) => d.data).sort((a, b) => a.id - b.id);
  canvas.dataset.points = JSON.stringify(drawnPoints.map((p) => [p.id, p.y, p.state]));
  canvas.dataset.best = JSON.stringify(drawn.find((d) => d.kind === 'best').data.map((p) => [p.id, p.y]));
  // The legend as drawn: one [label, colour] per swatch.
  if (overview.chart && overview.chart.legend && overview.chart.legend.legendItems)
    canvas.dataset.legend = JSON.stringify(overview.chart.legend.legendItems.map((i) => [i.text, i.fillStyle]));
}

/// The researcher's ideas with what became of each; the form to queue one where actions are allowed.
function renderIdeas(s) {
  const items = s.ideas.map((i) => el('li', { 'data-idea': String(i.id) },
    'idea ' + i.id + ' (' + i.source + '): ' + i.outcome + ': ', el('q', {}, i.text)));
  if (!items.length) items.push(el('li', {}, 'none queued (autoresearchd idea "TEXT")'));
  $('#ideas').replaceChildren(...items);
  $('#idea-form').hidden = !s.allow_actions;
}

/// The research memory's most tried regions (file and function or block of lines) and their keep rates.
function renderRegions(s) {
  const rows = (s.regions || []).map((r) => el('tr', { 'data-region': r.region },
    el('td', {}, r.region), el('td', {}, String(r.tries)), el('td', {}, String(r.kept)),
    el('td', {}, Math.round(100 * r.keep_rate) + '%'),
    el('td', {}, r.outcomes.map((o) => o.count + ' ' + o.status).join(', '))));
  if (!rows.length) rows.push(el('tr', {}, el('td', { colspan: '5' }, 'no change finished yet')));
  $('#regions tbody').replaceChildren(...rows);
}

/// The promotion ladder: each rung above 0 (size, reference, σ there), the GPU
/// time spent at rungs above 0, and the kept changes with a label badge per rung.
function renderLadder(s) {
  const ladder = s.ladder;
  $('#ladder').hidden = !ladder;
  if (!ladder) return;
  const share = el('li', {}, 'GPU time at rungs above 0: ' + fixed(100 * ladder.promotion_share, 1) + '% of ' +
    fixed(100 * ladder.max_share, 0) + '% allowed; a round every ' + ladder.every + ' kept changes');
  $('#ladder-rungs').replaceChildren(share, ...ladder.rungs.map((r) => el('li', { 'data-rung': String(r.rung) },
    r.name + ' (rung ' + r.rung + '): depth_scale ' + r.depth_scale + ', budget ' + r.budget_s + ' s; reference ' +
    (r.reference ? '#' + r.reference.id + ' ' + r.reference.commit.slice(0, 7) : 'the base') + '; σ ' +
    (r.sigma === null ? 'not measured yet' : fixed(r.sigma, 6) + ' (df ' + r.df + ')'))));
  const head = $('#ladder-changes thead tr');
  head.replaceChildren(el('th', {}, '#'), el('th', {}, 'commit'), ...ladder.rungs.map((r) => el('th', {}, r.name)),
    el('th', {}, 'description'));
  const rows = ladder.changes.map((c) => el('tr', { 'data-change': String(c.id) },
    el('td', { class: 'num' }, el('a', { href: '/experiment/' + c.id }, String(c.id))),
    el('td', {}, c.commit.slice(0, 7)),
    ...c.labels.map((l) => el('td', {}, el('span', { class: 'badge label-' + l.label, title: l.words }, l.label.replace('_', '-')))),
    el('td', {}, c.description)));
  if (!rows.length) rows.push(el('tr', {}, el('td', { colspan: String(3 + ladder.rungs.length) }, 'no kept change yet')));
  $('#ladder-changes tbody').replaceChildren(...rows);
}

async function refreshOverview() {
  const s = await getJSON('/api/status');
  // Ask again for everything from the oldest row still in flight, so rows
  // that finished since the last poll are replaced too.
  let since = 0;
  for (const r of overview.rows.values()) since = Math.max(since, r.id);
  for (const r of overview.rows.values()) if (!r.final) since = Math.min(since, r.id - 1);
  const fresh = await getJSON('/api/experiments?since=' + since);
  for (const r of fresh) overview.rows.set(r.id, r);
  overview.status = s;
  renderFigures(s);
  renderLanes(s);
  renderIdeas(s);
  renderRegions(s);
  renderLadder(s);
  renderTable();
  renderChart();
}

function initOverview() {
  $('#x-toggle').addEventListener('click', () => {
    overview.byTime = !overview.byTime;
    $('#x-toggle').textContent = overview.byTime ? 'x: time' : 'x: experiment number';
    renderChart();
  });
  $('#stop').addEventListener('click', async () => {
    if (!confirm('Stop the daemon? The experiment in flight is interrupted.')) return;
    try { $('#action-result').textContent = await postAction('/api/stop'); } catch (e) { showError(e); }
  });
  $('#idea-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      $('#idea-result').textContent = await postAction('/api/ideas', $('#idea-text').value);
      $('#idea-text').value = '';
      await refreshOverview();
    } catch (e) { showError(e); }
  });
  poll(refreshOverview);
}

// ---- experiment --------------------------------------------------------

/// The diff as lines coloured by kind (added, removed, hunk header, file).
function diffLines(diff) {
  return diff.split('\n').map((line) => {
    let cls = null;
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ')) cls = 'file';
    else if (line.startsWith('+')) cls = 'add';
    else if (line.startsWith('-')) cls = 'del';
    else if (line.startsWith('@@')) cls = 'hunk';
    return el('span', { class: cls }, line + '\n');
  });
}

async function refreshExperiment(id) {
  const x = await getJSON('/api/experiments/' + id);
  $('#title').textContent = '#' + x.id + ' ' + x.description;
  document.title = 'autoresearchd: #' + x.id;
  const fields = [
    ['status', x.state + (x.stage ? ' (stage ' + x.stage + ')' : '')], ['val_bpb', fixed(x.val_bpb, 6)],
    ['commit', x.commit || '-'], ['parent', x.parent_commit], ['gpu', x.gpu === null ? '-' : x.gpu],
    ['proposer', x.proposer], ['program.md', x.program_hash || '-'], ['started', clock(x.started_at)],
    ['duration', x.ended_at ? duration(x.ended_at - x.started_at) : 'running'], ['error', x.error || '-'],
    ['decision', x.decision || '-'], ['rule', x.decision_rule || '-'], ['runs', x.runs ? x.runs.text : '-'],
    ['summary', x.summary === null ? '-' : JSON.stringify(x.summary)],
  ];
  if (x.fix_of !== null) fields.push(['fixes', '#' + x.fix_of]);
  $('#fields').replaceChildren(...fields.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  $('#diff').replaceChildren(...(x.diff ? diffLines(x.diff) : [document.createTextNode('(no diff)')]));
  $('#log').textContent = x.log_tail || '(no log)';
  $('#trials tbody').replaceChildren(...x.trials.map((t) => el('tr', {},
    el('td', {}, t.gpu), el('td', {}, t.purpose), el('td', {}, t.commit.slice(0, 7)), el('td', {}, clock(t.started_at)),
    el('td', { class: 'num' }, t.ended_at ? duration(t.ended_at - t.started_at) : 'running'),
    el('td', { class: 'num' }, fixed(t.training_seconds, 1)), el('td', { class: 'num' }, fixed(t.val_bpb, 6)),
    el('td', {}, t.status || '-'), el('td', { class: 'num' }, String(t.rung)))));
  // Its labels at larger rungs, each with the comparison that decided it.
  $('#labels-box').hidden = !x.labels.length;
  $('#labels').replaceChildren(...x.labels.map((l) => {
    const e = l.evidence;
    const signed = (v, d) => (v >= 0 ? '+' : '') + fixed(v, d);
    const rule = e && e.gain_at_rung0 !== undefined && e.lambda !== undefined
      ? ', against its gain at rung 0 g = ' + signed(e.gain_at_rung0, 6) + ': λ = ' + signed(e.lambda, 2) : '';
    const why = e ? ': the change ' + fixed(e.candidate_mean, 6) + ' (n ' + e.candidate_n + ') against the commit before it ' +
      fixed(e.best_mean, 6) + ' (n ' + e.best_n + '), Δ = ' + signed(e.delta, 6) + ', σ ' + fixed(e.sigma, 6) + rule +
      '; trials ' + e.trials.join(', ') : '';
    return el('li', { 'data-rung': String(l.rung) }, el('span', { class: 'badge label-' + l.label }, l.label.replace('_', '-')),
      ' at ' + l.name + ' (' + clock(l.decided_at) + ')' + why);
  }));
  $('#attempts').replaceChildren(...x.attempts.map((a, i) => el('details', { open: i === x.attempts.length - 1 ? '' : null },
    el('summary', {}, 'attempt ' + (i + 1) + (a.error ? ' (failed: ' + a.error + ')' : '')),
    el('h3', {}, 'prompt'), el('pre', {}, a.prompt), el('h3', {}, 'answer'), el('pre', {}, a.response))));
  return x.final;
}

function initExperiment() {
  const id = Number(location.pathname.split('/').pop());
  // Poll only while the experiment is in flight.
  const run = async () => {
    let done = true;
    try { done = await refreshExperiment(id); showError(null); } catch (e) { showError(e); done = false; }
    if (!done) setTimeout(run, POLL_MS);
  };
  run();
}

// ---- program.md versions -----------------------------------------------

async function refreshPrograms() {
  const [versions, s] = await Promise.all([getJSON('/api/programs'), getJSON('/api/status')]);
  $('#programs').replaceChildren(...versions.slice().reverse().map((p) => el('section', { 'data-hash': p.hash },
    el('h2', {}, p.hash.slice(0, 12) + ', first seen ' + clock(p.first_seen)),
    el('p', {}, p.experiments.length ? 'used by ' : 'used by no experiment of this run',
      ...p.experiments.flatMap((id, i) => [i ? ', ' : '', el('a', { href: '/experiment/' + id }, '#' + id)])),
    el('pre', {}, p.content))));
  const editor = $('#editor');
  if (s.allow_actions && editor.hidden) {
    editor.hidden = false;
    if (versions.length) $('#program-text').value = versions[versions.length - 1].content;
  }
}

function initPrograms() {
  $('#save-program').addEventListener('click', async () => {
    try {
      const hash = await postAction('/api/program', $('#program-text').value);
      $('#action-result').textContent = 'saved as ' + hash.slice(0, 12);
      await refreshPrograms();
    } catch (e) { showError(e); }
  });
  poll(refreshPrograms);
}

({ overview: initOverview, experiment: initExperiment, programs: initPrograms })[document.body.dataset.page]();
