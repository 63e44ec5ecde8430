// Kiln's dashboard: polls GET /api/v1/dashboard once a second and draws it. Plain DOM and inline SVG, no framework.
// The management token, if the cluster has one, comes once from this page's address (?token=...), is kept in this
// tab's sessionStorage, removed from the address bar, and sent only as an Authorization header.
// window.kiln holds what was last drawn (tests and curious operators read it): data, plotted[model] = series,
// llm[model] = the "Generative models" row's figures.
(function () {
  'use strict';
  const TOKEN_KEY = 'kiln.token';
  const POLL_MS = 1000;
  const FETCH_TIMEOUT_MS = 8000; // a node that does not answer never stops the polling
  const SVGNS = 'http://www.w3.org/2000/svg';
  const state = window.kiln = { data: null, plotted: {}, llm: {}, polls: 0, failures: 0, lastOkMs: 0 };

  (function takeTokenFromAddress() {
    const params = new URLSearchParams(location.search);
    if (params.has('token')) {
      sessionStorage.setItem(TOKEN_KEY, params.get('token'));
      params.delete('token');
      const rest = params.toString();
      history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
    }
  })();

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v; else if (k.startsWith('data-')) e.setAttribute(k, v); else e[k] = v;
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  const fmt = {
    num(v) {
      if (v === null || v === undefined || Number.isNaN(v)) return '–';
      if (Math.abs(v) >= 1000) return (v / 1000).toFixed(v >= 10000 ? 0 : 1) + 'k';
      return Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 2 : 1);
    },
    ms(v) { return v === null || v === undefined ? '–' : v < 1 ? v.toFixed(2) + ' ms' : fmt.num(v) + ' ms'; },
    bytes(v) {
      if (v === null || v === undefined) return '–';
      const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return v.toFixed(i ? 1 : 0) + ' ' + u[i];
    },
    ago(ms, now) {
      if (!ms) return '–';
      const s = Math.max(0, Math.round((now - ms) / 1000));
      return s < 60 ? s + ' s ago' : s < 3600 ? Math.floor(s / 60) + ' min ago' : Math.floor(s / 3600) + ' h ago';
    },
    took(a, b, now) {
      if (!a) return '–';
      const s = Math.max(0, ((b || now) - a) / 1000);
      return s < 60 ? s.toFixed(1) + ' s' : Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
    }
  };

  function tone(word) {
    const w = String(word || '').toUpperCase();
    if (['READY', 'ALIVE', 'SUCCEEDED', 'DONE', 'COMPLETED', 'UP', 'IDLE', 'BUSY'].includes(w)) return 'ok';
    if (['FAILED', 'DEAD', 'DOWN', 'NODE DOWN', 'UNSCHEDULABLE', 'CANCELLED', 'ERROR'].includes(w)) return 'bad';
    if (['RUNNING', 'ROLLING'].includes(w)) return 'blue';
    if (['DEPLOYING', 'PENDING', 'RESTARTING', 'STARTING', 'DELETING', 'QUEUED', 'DRAINING'].includes(w)) return 'warn';
    return 'dim';
  }

  function badge(word, extra) { return el('span', { class: 'badge ' + tone(word) }, word, extra || null); }

  // One plot: lines over the series' seconds, nulls leave gaps; the y scale starts at 0.
  function plot(title, lines, unit, start, end) {
    const W = 300, H = 90, PAD = 2;
    let max = 0;
    for (const l of lines) for (const v of l.values) if (v !== null && v > max) max = v;
    const top = max > 0 ? max * 1.15 : 1;
    const n = Math.max(1, lines[0].values.length - 1);
    const box = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img' });
    for (let g = 1; g < 4; g++) {
      box.append(svg('line', { x1: 0, x2: W, y1: (H * g) / 4, y2: (H * g) / 4, stroke: '#263241', 'stroke-width': 1 }));
    }
    for (const l of lines) {
      let pts = [];
      const flush = () => {
        if (pts.length > 1) {
          box.append(svg('polyline', { points: pts.join(' '), fill: 'none', stroke: l.color, 'stroke-width': 1.6,
            'vector-effect': 'non-scaling-stroke', 'stroke-linejoin': 'round', 'data-series': l.name }));
        } else if (pts.length === 1) {
          const [x, y] = pts[0].split(',');
          box.append(svg('circle', { cx: x, cy: y, r: 1.5, fill: l.color, 'data-series': l.name }));
        }
        pts = [];
      };
      l.values.forEach((v, i) => {
        if (v === null) { flush(); return; }
        const x = (i / n) * W;
        const y = H - PAD - (v / top) * (H - 2 * PAD);
        pts.push(x.toFixed(1) + ',' + y.toFixed(1));
      });
      flush();
    }
    const now = lines.map(l => el('span', { class: 'legend-' + l.key }, l.name + ' ' + l.format(last(l.values)))).reduce(
      (acc, x) => acc.concat(acc.length ? [' · ', x] : [x]), []);
    return el('div', { class: 'plot' },
      el('div', { class: 'title' }, el('span', {}, title), el('span', { class: 'now' }, now)),
      box,
      el('div', { class: 'axis' }, el('span', {}, Math.round((end - start + 1) / 60) + ' min ago'),
        el('span', {}, 'max ' + fmt.num(max) + unit), el('span', {}, 'now')));
  }

  function last(values) {
    for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
    return null;
  }

  function seriesOf(data, name) {
    const m = data.series && data.series.models && data.series.models[name];
    const len = data.series ? data.series.end - data.series.start + 1 : 0;
    const zeros = () => new Array(len).fill(0);
    const nulls = () => new Array(len).fill(null);
    return m || { rate: zeros(), errors: zeros(), p50: nulls(), p99: nulls() };
  }

  function plots(data, name) {
    const s = seriesOf(data, name);
    state.plotted[name] = s;
    const { start, end } = data.series;
    return el('div', { class: 'plots', 'data-model': name },
      plot('requests / s', [
        { name: 'rate', key: 'rate', values: s.rate, color: '#58a6ff', format: fmt.num },
        { name: 'errors', key: 'err', values: s.errors, color: '#f85149', format: fmt.num }], '/s', start, end),
      plot('latency', [
        { name: 'p50', key: 'p50', values: s.p50, color: '#3fb950', format: fmt.ms },
        { name: 'p99', key: 'p99', values: s.p99, color: '#bc8cff', format: fmt.ms }], ' ms', start, end));
  }

  function resources(r) {
    return r || {};
  }

  function renderNodes(data) {
    const body = document.querySelector('#nodes tbody');
    const rows = data.nodes.map(n => {
      const total = resources(n.total), free = resources(n.available);
      const down = !n.alive;
      const gpus = (n.gpus || []).map(g => el('span', { class: 'chip ok' }, 'GPU ' + g.index + ' ',
        g.utilization === null ? '' : Math.round(g.utilization * 100) + '% · ',
        fmt.bytes(g.memoryUsedBytes) + ' / ' + fmt.bytes(g.memoryTotalBytes)));
      const gpuCell = gpus.length ? gpus : (total.GPU ? fmt.num(free.GPU || 0) + ' / ' + fmt.num(total.GPU) : '–');
      const labels = Object.entries(n.labels || {}).map(([k, v]) => el('span', { class: 'chip dim' }, k + '=' + v));
      return el('tr', { class: down ? 'down' : '', 'data-node': n.id, 'data-state': down ? 'down' : 'alive' },
        el('td', {}, el('b', {}, n.id), n.leader ? el('span', { class: 'leader', title: 'leader' }, '★') : null,
          n.self ? el('span', { class: 'self' }, '(this page)') : null),
        el('td', {}, down ? badge('DOWN', n.downSinceMs ? ' ' + fmt.ago(n.downSinceMs, data.nowMs) : '')
          : badge('ALIVE')),
        el('td', {}, n.address || '–'),
        el('td', {}, fmt.num(free.CPU) + ' / ' + fmt.num(total.CPU)),
        el('td', {}, gpuCell),
        el('td', {}, total.memory ? fmt.bytes(free.memory) + ' / ' + fmt.bytes(total.memory) : '–'),
        el('td', {}, labels.length ? labels : '–'));
    });
    body.replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { class: 'empty', colSpan: 7 }, 'no nodes'))]));
  }

  function renderDeployment(data, d) {
    const down = new Set(data.nodes.filter(n => !n.alive).map(n => n.id));
    const poolState = p => down.has(p.node) ? 'NODE DOWN' : p.draining ? 'DRAINING' : p.ready ? 'READY' : 'STARTING';
    const pools = el('table', { class: 'pools' },
      el('thead', {}, el('tr', {}, ['node', 'version', 'state', 'workers busy/idle (target)', 'queue', 'in flight']
        .map(h => el('th', {}, h)))),
      el('tbody', {}, d.pools.length ? d.pools.map(p => el('tr', { 'data-pool': p.node },
        el('td', {}, p.node), el('td', {}, p.version),
        el('td', {}, badge(poolState(p))),
        el('td', {}, p.busy !== undefined ? `${p.busy}/${p.idle} (${p.targetWorkers})` : `${p.workers} (${p.targetWorkers})`),
        el('td', {}, fmt.num(p.queueDepth)), el('td', {}, fmt.num(p.inFlight))))
        : el('tr', {}, el('td', { class: 'empty', colSpan: 6 }, 'no pools yet'))));
    const workers = el('div', { class: 'workers' }, d.workers.map(w => el('span', {
      class: 'chip ' + (down.has(w.node) ? 'bad' : w.state === 'ALIVE' ? 'ok' : tone(w.state)),
      title: 'restarts: ' + w.restarts },
      `${w.node} #${w.index} v${w.version} ${w.state}` + (w.restarts ? ` ↻${w.restarts}` : ''))));
    return el('div', { class: 'card', 'data-deployment': d.name, 'data-phase': d.phase },
      el('h3', {}, d.name, badge(d.phase)),
      el('div', { class: 'meta' }, 'version ', el('b', {}, d.version), ' · serving ', el('b', {}, d.servingVersion || '–'),
        ' · queued ', el('b', {}, fmt.num(d.queueDepth)), ' · restarts ', el('b', {}, fmt.num(d.restarts)),
        d.lastScaling ? ' · ' + d.lastScaling : ''),
      d.failure ? el('div', { class: 'failure' }, d.failure) : null,
      d.message && d.phase !== 'READY' ? el('div', { class: 'message' }, d.message) : null,
      plots(data, d.name), pools, workers);
  }

  function renderDeployments(data) {
    const box = document.getElementById('deployments');
    const cards = data.deployments.map(d => renderDeployment(data, d));
    const known = new Set(data.deployments.map(d => d.name));
    for (const name of Object.keys((data.series && data.series.models) || {})) {
      if (!known.has(name)) {
        cards.push(el('div', { class: 'card', 'data-deployment': name },
          el('h3', {}, name, badge('MODEL')), el('div', { class: 'meta' }, 'requests for a model of a deployment'),
          plots(data, name)));
      }
    }
    box.replaceChildren(...(cards.length ? cards : [el('div', { class: 'card' }, 'No deployments. ',
      el('code', {}, 'kiln deploy app.yaml'), ' adds some.')]));
  }

  // One row per text generation model: the server's own figures (GET /api/v1/dashboard's llm), as measured.
  function renderLlm(data) {
    const llm = data.llm || {};
    const names = Object.keys(llm).sort();
    state.llm = llm;
    document.getElementById('llm-panel').hidden = names.length === 0;
    const pct = v => v === null || v === undefined ? '–' : (100 * v).toFixed(v < 0.1 ? 1 : 0) + ' %';
    const cell = (field, text) => el('td', { 'data-field': field }, text);
    const rows = names.map(name => {
      const m = llm[name];
      return el('tr', { 'data-llm': name },
        el('td', {}, el('b', {}, name)),
        cell('ttft', fmt.ms(m.ttftP50Ms) + ' / ' + fmt.ms(m.ttftP99Ms)),
        cell('itl', fmt.ms(m.itlP50Ms)),
        cell('tokens', fmt.num(m.tokensPerSecond)),
        cell('sequences', m.running === null ? '–' : fmt.num(m.running) + ' / ' + fmt.num(m.waiting)),
        cell('kv', pct(m.kvUsage)),
        cell('prefix', pct(m.prefixHitRate)),
        cell('preemptions', fmt.num(m.preemptions)));
    });
    document.querySelector('#llm tbody').replaceChildren(...rows);
    const seconds = names.length ? llm[names[0]].seconds : 0;
    document.getElementById('llm-note').textContent = names.length ? 'rates, percentiles, hit rate and preemptions '
      + 'over the last ' + seconds + ' s of all nodes; sequences and KV use as each node last reported them' : '';
  }

  function renderRuns(data) {
    const rows = data.pipelineRuns.map(r => el('tr', { 'data-run': r.runId },
      el('td', {}, r.runId), el('td', {}, r.pipeline), el('td', {}, badge(r.state)),
      el('td', {}, r.coordinator || '–'),
      el('td', {}, r.steps.map(s => el('span', { class: 'chip ' + tone(s.state), title: s.error || s.state },
        s.name + (s.node ? ' @' + s.node : '') + (s.attempts > 1 ? ' ×' + s.attempts : '')))),
      el('td', {}, fmt.ago(r.createdAtMs, data.nowMs)), el('td', {}, fmt.took(r.createdAtMs, r.endedAtMs, data.nowMs))));
    document.querySelector('#runs tbody').replaceChildren(...(rows.length ? rows
      : [el('tr', {}, el('td', { class: 'empty', colSpan: 7 }, 'no runs'))]));
  }

  function renderJobs(data) {
    const rows = data.jobs.map(j => {
      const bar = el('span', { class: 'bar' }, el('span', {}));
      bar.firstChild.style.width = (j.total ? Math.round((100 * j.done) / j.total) : 0) + '%';
      return el('tr', { 'data-job': j.id },
        el('td', {}, el('b', {}, j.name || j.id), el('div', { class: 'self' }, j.id)), el('td', {}, j.target),
        el('td', {}, badge(j.state)), el('td', {}, j.coordinator || '–'),
        el('td', {}, bar, `${j.done}/${j.total}` + (j.failed ? ` (${j.failed} failed)` : '')),
        el('td', {}, fmt.num(j.rowsPerSecond) + '/s'),
        el('td', {}, Object.entries(j.resultsByNode || {}).map(([n, c]) => el('span', { class: 'chip dim' }, n + ' ' + c))));
    });
    document.querySelector('#jobs tbody').replaceChildren(...(rows.length ? rows
      : [el('tr', {}, el('td', { class: 'empty', colSpan: 7 }, 'no jobs'))]));
  }

  function render(data) {
    const alive = data.nodes.filter(n => n.alive).length;
    const down = data.nodes.length - alive;
    const ready = data.deployments.filter(d => d.phase === 'READY').length;
    document.getElementById('summary').replaceChildren(el('span', {},
      el('b', {}, alive), alive === 1 ? ' node alive' : ' nodes alive',
      down ? [' · ', el('b', { class: 'legend-err' }, down), ' down'] : [],
      ' · leader ', el('b', {}, data.leader || '–'), ' · ', el('b', {}, ready + '/' + data.deployments.length),
      ' deployments ready · served by ', el('b', {}, data.node)));
    renderNodes(data);
    renderDeployments(data);
    renderLlm(data);
    renderRuns(data);
    renderJobs(data);
  }

  function showProblem(text) {
    const p = document.getElementById('problem');
    p.hidden = !text;
    p.textContent = text || '';
  }

  async function poll() {
    const headers = { Accept: 'application/json' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = 'Bearer ' + token;
    const abort = new AbortController();
    const limit = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
    try {
      const r = await fetch('/api/v1/dashboard', { headers, cache: 'no-store', credentials: 'omit',
        signal: abort.signal });
      if (r.status === 401) {
        document.getElementById('auth').hidden = false;
        showProblem(token ? 'The token was refused.' : '');
        state.failures++;
        return;
      }
      const body = await r.json();
      if (!r.ok) throw new Error(body.error || r.status);
      document.getElementById('auth').hidden = true;
      showProblem('');
      state.data = body;
      state.polls++;
      state.lastOkMs = Date.now();
      render(body);
    } catch (e) {
      state.failures++;
      showProblem('Cannot read the cluster from this node: ' + e.message);
    } finally {
      clearTimeout(limit);
      const upd = document.getElementById('updated');
      const age = state.lastOkMs ? Math.round((Date.now() - state.lastOkMs) / 1000) : null;
      upd.textContent = age === null ? '' : age <= 2 ? 'live' : 'last update ' + age + ' s ago';
      upd.classList.toggle('stale', age !== null && age > 2);
      setTimeout(poll, POLL_MS);
    }
  }

  document.getElementById('auth').addEventListener('submit', ev => {
    ev.preventDefault();
    const v = document.getElementById('auth-token').value.trim();
    if (v) sessionStorage.setItem(TOKEN_KEY, v);
  });

  poll();
})();
