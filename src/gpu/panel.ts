/**
 * The "GPU Resources" side panel: what the GPUs (and the host) of this node are doing now, over
 * the history window, and which notebooks use them.
 *
 * Plain DOM, built once with `createElement`/`textContent` (data — node names, process commands,
 * notebook paths — is never parsed as HTML) and updated in place on every poll: only text that
 * changed is written, GPU cards and process rows are kept by key, and charts are updated through
 * `IChartRenderer` (plotly's `react` in the real app) only when visible and only when the data or
 * the theme changed. Each update is measured as `jupyter-air:gpu-render` (User Timing), which the
 * browser benchmark reads.
 *
 * The panel starts its model's polling when shown and stops it when hidden.
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IChartLayout, IChartRenderer, IChartTrace } from './chart';
import {
  NA,
  NONE,
  formatAge,
  formatDuration,
  formatGiB,
  formatMemory,
  formatPercent,
  formatPower,
  formatTemperature
} from './format';
import { GpuModel } from './model';
import {
  GpuMetric,
  ISeries,
  METRICS,
  METRIC_ORDER,
  bucketFor,
  buildAllSeries,
  decimate
} from './series';
import { IGpuDevice, IGpuProcess, IGpuReading, ISample } from './types';

/**
 * The User Timing measure of one panel update: the main-thread time spent rendering it (text,
 * cards, processes and the three charts), from its start.
 */
export const RENDER_MEASURE = 'jupyter-air:gpu-render';
/**
 * The User Timing measure of each uninterrupted piece of that work (the text update; one chart
 * per animation frame): what a single frame has to absorb.
 */
export const RENDER_FRAME_MEASURE = 'jupyter-air:gpu-render-frame';
/** Drop old measures after this many so a panel open for days does not accumulate them. */
const MAX_MEASURES = 1000;

/** Trace colours, one per GPU index (readable on light and dark backgrounds). */
export const GPU_COLORS = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac'
];

/** The colour of a GPU's lines and card swatch. */
export function gpuColor(index: number): string {
  return GPU_COLORS[
    ((index % GPU_COLORS.length) + GPU_COLORS.length) % GPU_COLORS.length
  ];
}

/** Chart colours taken from JupyterLab's theme variables. */
export interface IChartTheme {
  font: string;
  fontMuted: string;
  fontFamily: string;
  background: string;
  grid: string;
  line: string;
  hoverBackground: string;
}

/** Read the chart colours from the current JupyterLab theme's CSS variables. */
export function readChartTheme(element: Element = document.body): IChartTheme {
  const style = window.getComputedStyle(element);
  const css = (name: string, fallback: string) =>
    style.getPropertyValue(name).trim() || fallback;
  return {
    font: css('--jp-ui-font-color1', '#212121'),
    fontMuted: css('--jp-ui-font-color2', '#616161'),
    fontFamily: css(
      '--jp-ui-font-family',
      'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
    ),
    background: css('--jp-layout-color0', '#ffffff'),
    grid: css('--jp-border-color2', '#e0e0e0'),
    line: css('--jp-border-color1', '#bdbdbd'),
    hoverBackground: css('--jp-layout-color2', '#eeeeee')
  };
}

/** Create an element with a class and optional text. */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (className) {
    el.className = className;
  }
  if (text !== undefined) {
    el.textContent = text;
  }
  return el;
}

/** Write text only when it changed (no layout work for unchanged values). */
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) {
    el.textContent = text;
  }
}

/** Show or hide an element (the `hidden` attribute), touching the DOM only on change. */
function setHidden(el: HTMLElement, hidden: boolean): void {
  if (el.hidden !== hidden) {
    el.hidden = hidden;
  }
}

function setAttr(el: HTMLElement, name: string, value: string): void {
  if (el.getAttribute(name) !== value) {
    el.setAttribute(name, value);
  }
}

/** Width of a meter's fill, `0%`..`100%`, or hidden when unknown. */
function setMeter(fill: HTMLElement, percent: number | null): void {
  const known = percent !== null && Number.isFinite(percent);
  setHidden(fill, !known);
  if (known) {
    const width = `${Math.min(100, Math.max(0, percent as number)).toFixed(1)}%`;
    if (fill.style.width !== width) {
      fill.style.width = width;
    }
  }
}

/** The DOM of one GPU card, kept between updates. */
interface ICardView {
  root: HTMLElement;
  name: HTMLElement;
  lost: HTMLElement;
  metrics: HTMLElement;
  util: HTMLElement;
  utilFill: HTMLElement;
  mem: HTMLElement;
  memFill: HTMLElement;
  temp: HTMLElement;
  power: HTMLElement;
}

/** The DOM of one process row, kept between updates. */
interface IProcessRowView {
  root: HTMLTableRowElement;
  signature: string;
}

/** One process with the GPU it runs on. */
interface IProcessEntry {
  gpu: number;
  process: IGpuProcess;
}

/** The "GPU Resources" panel. */
export class GpuPanel extends Widget {
  constructor(options: GpuPanel.IOptions = {}) {
    super();
    this.addClass('jp-air-gpu');
    this._model = options.model ?? new GpuModel();
    this._ownsModel = !options.model;
    this._renderer = options.renderer ?? null;
    this._openPath = options.openPath ?? null;
    this._themeReader = options.readTheme ?? (() => readChartTheme());
    this._scheduleFrame =
      options.scheduleFrame ??
      (callback => {
        window.requestAnimationFrame(() => callback());
      });
    this._build();
    this._model.changed.connect(this._onModelChanged, this);
    this.render();
  }

  /** The model behind the panel. */
  get model(): GpuModel {
    return this._model;
  }

  /** The element of one chart (for tests and the benchmark). */
  chartElement(metric: GpuMetric): HTMLElement {
    return this._charts[metric].plot;
  }

  /**
   * Re-read the theme colours and redraw the charts (call on JupyterLab theme changes).
   */
  themeChanged(): void {
    this._theme = null;
    this._themeVersion++;
    this._renderCharts();
  }

  /**
   * Update the panel from the model: text, cards and processes now, then the charts that are
   * out of date, one per animation frame (each plotly redraw is a few milliseconds: drawing the
   * three in one go would block a frame). Measured as `jupyter-air:gpu-render`.
   */
  render(): void {
    this._timed(() => {
      this._renderState();
      this._renderHost();
      this._renderCards();
      this._renderProcesses();
      this._renderUpdated();
    });
    this._renderCharts();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._stopTicker();
    this._model.changed.disconnect(this._onModelChanged, this);
    this._model.stop();
    if (this._renderer) {
      for (const metric of METRIC_ORDER) {
        this._renderer.purge(this._charts[metric].plot);
      }
    }
    if (this._ownsModel) {
      this._model.dispose();
    }
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this._onShown();
    }
  }

  protected onBeforeDetach(msg: Message): void {
    this._onHidden();
    super.onBeforeDetach(msg);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._onShown();
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._onHidden();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    if (!this._renderer || !this.isVisible) {
      return;
    }
    for (const metric of METRIC_ORDER) {
      if (this._drawn[metric]) {
        this._renderer.resize(this._charts[metric].plot);
      }
    }
    this._renderCharts();
  }

  private _onShown(): void {
    this._model.start();
    this._startTicker();
    this._renderUpdated();
    this._renderCharts();
  }

  private _onHidden(): void {
    this._model.stop();
    this._stopTicker();
  }

  private _onModelChanged(): void {
    this.render();
  }

  private _startTicker(): void {
    if (this._ticker === null) {
      this._ticker = window.setInterval(() => this._renderUpdated(), 1000);
    }
  }

  private _stopTicker(): void {
    if (this._ticker !== null) {
      window.clearInterval(this._ticker);
      this._ticker = null;
    }
  }

  /** Build the fixed skeleton once. */
  private _build(): void {
    const node = this.node;

    const header = h('div', 'jp-air-gpu-header');
    const title = h('h2', 'jp-air-gpu-title', 'GPU Resources');
    this._backend = h('span', 'jp-air-gpu-backend', 'simulated');
    this._backend.title =
      'Simulated telemetry: these are not real GPU readings';
    this._backend.hidden = true;
    this._refresh = h('button', 'jp-air-gpu-refresh', 'Refresh');
    this._refresh.type = 'button';
    this._refresh.title = 'Take a sample now';
    this._refresh.addEventListener('click', () => {
      void this._model.refresh();
    });
    header.append(title, this._refresh);

    const meta = h('div', 'jp-air-gpu-meta');
    this._node = h('span', 'jp-air-gpu-node', NONE);
    this._node.title = 'Node';
    this._driver = h('span', 'jp-air-gpu-driver');
    this._driver.hidden = true;
    this._updated = h('span', 'jp-air-gpu-updated', formatAge(null));
    meta.append(this._node, this._backend, this._driver, this._updated);

    this._loading = h('div', 'jp-air-gpu-loading', 'Loading GPU telemetry…');

    this._paused = h('div', 'jp-air-gpu-paused');
    this._paused.setAttribute('role', 'status');
    this._pausedText = h('span', 'jp-air-gpu-paused-text');
    this._resume = h('button', 'jp-air-gpu-resume', 'Resume');
    this._resume.type = 'button';
    this._resume.addEventListener('click', () => this._model.resume());
    this._paused.append(this._pausedText, this._resume);
    this._paused.hidden = true;

    this._error = h('div', 'jp-air-gpu-error');
    this._error.setAttribute('role', 'alert');
    this._error.hidden = true;

    this._warning = h('div', 'jp-air-gpu-warning');
    this._warning.hidden = true;

    this._nogpu = h('div', 'jp-air-gpu-nogpu');
    this._nogpu.hidden = true;

    const host = h('div', 'jp-air-gpu-host');
    const hostTitle = h('h3', 'jp-air-gpu-section-title', 'Host');
    const hostCpu = h('div', 'jp-air-gpu-metric');
    this._hostCpu = h('span', 'jp-air-gpu-host-cpu jp-air-gpu-value', NA);
    hostCpu.append(h('span', 'jp-air-gpu-label', 'CPU'), this._hostCpu);
    const hostMem = h('div', 'jp-air-gpu-metric');
    this._hostMem = h('span', 'jp-air-gpu-host-mem jp-air-gpu-value', NA);
    hostMem.append(h('span', 'jp-air-gpu-label', 'Memory'), this._hostMem);
    const hostGrid = h('div', 'jp-air-gpu-host-metrics');
    hostGrid.append(hostCpu, hostMem);
    host.append(hostTitle, hostGrid);
    this._host = host;

    this._cards = h('div', 'jp-air-gpu-cards');

    this._chartsBox = h('div', 'jp-air-gpu-charts');
    for (const metric of METRIC_ORDER) {
      const box = h('div', 'jp-air-gpu-chart');
      box.dataset.metric = metric;
      const chartTitle = h(
        'h3',
        'jp-air-gpu-chart-title jp-air-gpu-section-title',
        METRICS[metric].title
      );
      const plot = h('div', 'jp-air-gpu-chart-plot');
      box.append(chartTitle, plot);
      this._chartsBox.append(box);
      this._charts[metric] = { box, plot };
    }

    this._processes = h('div', 'jp-air-gpu-processes');
    const procTitle = h('h3', 'jp-air-gpu-section-title', 'Processes');
    const table = h('table', 'jp-air-gpu-process-table');
    const thead = h('thead');
    const headRow = h('tr');
    for (const label of [
      'GPU',
      'PID',
      'User',
      'Process',
      'GPU memory',
      'Notebook'
    ]) {
      const th = h('th', undefined, label);
      th.scope = 'col';
      headRow.append(th);
    }
    thead.append(headRow);
    this._processBody = h('tbody');
    table.append(thead, this._processBody);
    this._processEmpty = h(
      'div',
      'jp-air-gpu-processes-empty',
      'No processes are using the GPUs.'
    );
    this._processes.append(procTitle, table, this._processEmpty);

    this._held = h('div', 'jp-air-gpu-held');
    this._held.hidden = true;

    node.append(
      header,
      meta,
      this._loading,
      this._paused,
      this._error,
      this._warning,
      this._nogpu,
      this._host,
      this._cards,
      this._chartsBox,
      this._processes,
      this._held
    );
  }

  /** Status banners, header and meta. */
  private _renderState(): void {
    const model = this._model;
    const payload = model.payload;
    const status = model.status;

    setHidden(this._backend, payload?.backend !== 'simulated');
    setText(this._node, payload?.node || NONE);
    const driver = payload?.driver_version;
    setHidden(this._driver, !driver);
    setText(this._driver, driver ? `driver ${driver}` : '');

    setHidden(this._loading, status !== 'loading');

    setHidden(this._paused, status !== 'paused');
    setText(
      this._pausedText,
      `Paused after ${formatDuration(model.idleTimeoutS)} without activity`
    );

    const error = model.error;
    setHidden(this._error, error === null);
    setText(
      this._error,
      error === null
        ? ''
        : payload
          ? `Could not update: ${error}`
          : `Could not load GPU telemetry: ${error}`
    );

    const warning = payload?.error ?? null;
    setHidden(this._warning, !warning);
    setText(this._warning, warning ? `Sampling error: ${warning}` : '');

    const noGpu = payload?.backend === 'none';
    setHidden(this._nogpu, !noGpu);
    setText(
      this._nogpu,
      noGpu ? payload?.reason || 'No GPU was found on this node.' : ''
    );
    const hasGpus = !!payload && !noGpu;
    setHidden(this._cards, !hasGpus);
    setHidden(this._chartsBox, !hasGpus);
    setHidden(this._processes, !hasGpus);
    setHidden(this._host, !payload);

    const held = payload?.held_by ?? [];
    setHidden(this._held, held.length === 0);
    setText(
      this._held,
      held.length ? `Sampling kept on by: ${held.join(', ')}` : ''
    );

    const busy = model.isBusy;
    if (this._refresh.disabled !== busy) {
      this._refresh.disabled = busy;
    }
  }

  private _renderHost(): void {
    const host = this._model.latest?.host;
    setText(this._hostCpu, formatPercent(host?.cpu_pct, 1));
    setText(
      this._hostMem,
      formatMemory(host?.mem_used_mb ?? null, host?.mem_total_mb ?? null)
    );
  }

  private _renderUpdated(): void {
    setText(this._updated, formatAge(this._model.secondsSinceUpdate()));
  }

  /** One card per GPU, kept by index. */
  private _renderCards(): void {
    const payload = this._model.payload;
    const latest = this._model.latest;
    const devices = new Map<number, IGpuDevice>();
    for (const device of payload?.devices ?? []) {
      devices.set(device.index, device);
    }
    let readings: IGpuReading[] = [];
    if (payload && payload.backend !== 'none') {
      if (latest) {
        readings = latest.gpus;
      } else {
        readings = Array.from(devices.values()).map(device =>
          emptyReading(device)
        );
      }
    }
    const seen = new Set<number>();
    let previous: HTMLElement | null = null;
    for (const reading of readings) {
      seen.add(reading.index);
      let card = this._cardViews.get(reading.index);
      if (!card) {
        card = this._createCard(reading.index);
        this._cardViews.set(reading.index, card);
      }
      this._updateCard(card, reading, devices.get(reading.index));
      // keep DOM order = reading order, moving nodes only when needed
      const expected: ChildNode | null = previous
        ? previous.nextSibling
        : this._cards.firstChild;
      if (expected !== card.root) {
        this._cards.insertBefore(card.root, expected);
      }
      previous = card.root;
    }
    for (const [index, card] of this._cardViews) {
      if (!seen.has(index)) {
        card.root.remove();
        this._cardViews.delete(index);
      }
    }
  }

  private _createCard(index: number): ICardView {
    const root = h('div', 'jp-air-gpu-card');
    root.dataset.gpuIndex = String(index);
    const head = h('div', 'jp-air-gpu-card-head');
    const swatch = h('span', 'jp-air-gpu-swatch');
    swatch.style.backgroundColor = gpuColor(index);
    const label = h('span', 'jp-air-gpu-index', `GPU ${index}`);
    const name = h('span', 'jp-air-gpu-name');
    const lost = h('span', 'jp-air-gpu-lost', 'lost');
    lost.title = 'This GPU stopped answering';
    lost.hidden = true;
    head.append(swatch, label, name, lost);

    const metrics = h('div', 'jp-air-gpu-card-metrics');
    const row = (
      labelText: string,
      cls: string,
      meter: boolean
    ): [HTMLElement, HTMLElement] => {
      const metric = h('div', 'jp-air-gpu-metric');
      const value = h('span', `${cls} jp-air-gpu-value`, NA);
      metric.append(h('span', 'jp-air-gpu-label', labelText), value);
      const fill = h('span', 'jp-air-gpu-meter-fill');
      if (meter) {
        const bar = h('span', 'jp-air-gpu-meter');
        bar.append(fill);
        metric.append(bar);
      }
      metrics.append(metric);
      return [value, fill];
    };
    const [util, utilFill] = row('Utilisation', 'jp-air-gpu-util', true);
    const [mem, memFill] = row('Memory', 'jp-air-gpu-mem', true);
    const [temp] = row('Temperature', 'jp-air-gpu-temp', false);
    const [power] = row('Power', 'jp-air-gpu-power', false);
    root.append(head, metrics);
    return {
      root,
      name,
      lost,
      metrics,
      util,
      utilFill,
      mem,
      memFill,
      temp,
      power
    };
  }

  private _updateCard(
    card: ICardView,
    reading: IGpuReading,
    device: IGpuDevice | undefined
  ): void {
    const name = device?.name || 'GPU';
    setText(card.name, name);
    setAttr(
      card.name,
      'title',
      device?.uuid ? `${name}\n${device.uuid}` : name
    );
    const lost = !!reading.lost;
    card.root.classList.toggle('jp-mod-lost', lost);
    setHidden(card.lost, !lost);
    setHidden(card.metrics, lost);
    if (lost) {
      return;
    }
    const memTotal = reading.mem_total_mb ?? device?.mem_total_mb ?? null;
    const powerLimit = reading.power_limit_w ?? device?.power_limit_w ?? null;
    setText(card.util, formatPercent(reading.util_pct));
    setMeter(card.utilFill, reading.util_pct);
    setText(card.mem, formatMemory(reading.mem_used_mb, memTotal));
    setMeter(
      card.memFill,
      reading.mem_used_mb !== null && memTotal
        ? (reading.mem_used_mb / memTotal) * 100
        : null
    );
    setText(card.temp, formatTemperature(reading.temp_c));
    setText(card.power, formatPower(reading.power_w, powerLimit));
  }

  /** The processes of the newest sample, rows kept by GPU and PID. */
  private _renderProcesses(): void {
    const latest = this._model.latest;
    const entries: IProcessEntry[] = [];
    for (const gpu of latest?.gpus ?? []) {
      if (gpu.lost) {
        continue;
      }
      for (const process of gpu.processes ?? []) {
        entries.push({ gpu: gpu.index, process });
      }
    }
    entries.sort(
      (a, b) =>
        a.gpu - b.gpu ||
        (b.process.gpu_mem_mb ?? -1) - (a.process.gpu_mem_mb ?? -1) ||
        a.process.pid - b.process.pid
    );
    setHidden(this._processEmpty, entries.length > 0);

    const keep = new Set<string>();
    let previous: HTMLElement | null = null;
    for (const entry of entries) {
      const key = `${entry.gpu}:${entry.process.pid}`;
      keep.add(key);
      const signature = JSON.stringify([entry.gpu, entry.process]);
      let row = this._processRows.get(key);
      if (!row) {
        row = { root: h('tr', 'jp-air-gpu-process'), signature: '' };
        this._processRows.set(key, row);
      }
      if (row.signature !== signature) {
        this._fillProcessRow(row.root, entry);
        row.signature = signature;
      }
      const expected: ChildNode | null = previous
        ? previous.nextSibling
        : this._processBody.firstChild;
      if (expected !== row.root) {
        this._processBody.insertBefore(row.root, expected);
      }
      previous = row.root;
    }
    for (const [key, row] of this._processRows) {
      if (!keep.has(key)) {
        row.root.remove();
        this._processRows.delete(key);
      }
    }
  }

  private _fillProcessRow(
    row: HTMLTableRowElement,
    entry: IProcessEntry
  ): void {
    const { gpu, process } = entry;
    row.dataset.gpuIndex = String(gpu);
    row.dataset.pid = String(process.pid);
    row.replaceChildren();

    row.append(h('td', 'jp-air-gpu-process-gpu', String(gpu)));
    row.append(h('td', 'jp-air-gpu-process-pid', String(process.pid)));
    row.append(h('td', 'jp-air-gpu-process-user', process.user || NONE));

    const commandText = process.command || process.name || NONE;
    const command = h('td', 'jp-air-gpu-process-command', commandText);
    if (process.command || process.name) {
      command.title = process.command || process.name || '';
    }
    row.append(command);

    row.append(
      h('td', 'jp-air-gpu-process-mem', formatGiB(process.gpu_mem_mb, 2))
    );

    const notebook = h('td', 'jp-air-gpu-process-notebook');
    const kernel = process.kernel;
    const openPath = this._openPath;
    if (kernel?.path) {
      const path = kernel.path;
      if (openPath) {
        const link = h('button', 'jp-air-gpu-notebook-link', path);
        link.type = 'button';
        link.title = `Open ${path}`;
        link.addEventListener('click', () => openPath(path));
        notebook.append(link);
      } else {
        notebook.append(h('span', 'jp-air-gpu-notebook-path', path));
        notebook.title = path;
      }
    } else if (kernel?.kernel_name) {
      notebook.append(
        h('span', 'jp-air-gpu-kernel-name', `${kernel.kernel_name} kernel`)
      );
      notebook.title = `Kernel ${kernel.kernel_id}`;
    } else {
      notebook.textContent = NONE;
    }
    row.append(notebook);
  }

  /** Whether a chart does not show the current data and theme. */
  private _isStale(metric: GpuMetric): boolean {
    const drawn = this._drawn[metric];
    return (
      !drawn ||
      drawn.samples !== this._model.samplesVersion ||
      drawn.theme !== this._themeVersion
    );
  }

  /** Whether the charts can be drawn now (plotly misbehaves in hidden elements). */
  private _canDrawCharts(): boolean {
    const payload = this._model.payload;
    return (
      !!this._renderer &&
      !this.isDisposed &&
      this.isVisible &&
      !!payload &&
      payload.backend !== 'none'
    );
  }

  /** Draw the stale charts, one per animation frame; close the update when none is left. */
  private _renderCharts(): void {
    if (
      !this._canDrawCharts() ||
      !METRIC_ORDER.some(metric => this._isStale(metric))
    ) {
      this._finishUpdate();
      return;
    }
    if (this._framePending) {
      return;
    }
    this._framePending = true;
    this._scheduleFrame(() => {
      this._framePending = false;
      this._drawNextChart();
    });
  }

  /** Draw the next stale chart (round robin, so a fast stream of updates starves none). */
  private _drawNextChart(): void {
    if (!this._canDrawCharts()) {
      this._finishUpdate();
      return;
    }
    for (let k = 0; k < METRIC_ORDER.length; k++) {
      const metric = METRIC_ORDER[(this._nextChart + k) % METRIC_ORDER.length];
      if (this._isStale(metric)) {
        this._nextChart =
          (METRIC_ORDER.indexOf(metric) + 1) % METRIC_ORDER.length;
        this._timed(() => this._drawChart(metric));
        break;
      }
    }
    this._renderCharts();
  }

  /** Draw one chart from the current samples. */
  private _drawChart(metric: GpuMetric): void {
    const renderer = this._renderer as IChartRenderer;
    const payload = this._model.payload!;
    const plot = this._charts[metric].plot;
    const samples = this._model.samples;
    const series = this._series();
    const theme = this._theme ?? (this._theme = this._themeReader());
    const info = METRICS[metric];
    // about one point per pixel: more cannot be seen and only costs drawing time
    const bucketMs = bucketFor(
      samples.length,
      this._model.intervalS,
      plot.clientWidth
    );
    const traces: IChartTrace[] = series[metric].map(s => {
      const { x, y } = bucketMs ? decimate(s.x, s.y, bucketMs) : s;
      return {
        type: 'scatter',
        mode: 'lines',
        name: s.name,
        x,
        y,
        connectgaps: false,
        line: { color: gpuColor(s.gpuIndex), width: 1.5 },
        hovertemplate: `%{y:.${metric === 'mem' ? 1 : 0}f} ${info.unit}<extra>${s.name}</extra>`
      };
    });
    const memMaxGiB =
      metric === 'mem' ? memoryAxisMax(payload.devices, samples) : null;
    const range =
      metric === 'util'
        ? [0, 100]
        : memMaxGiB !== null
          ? [0, memMaxGiB]
          : undefined;
    renderer.render(plot, traces, chartLayout(theme, metric, range));
    this._drawn[metric] = {
      samples: this._model.samplesVersion,
      theme: this._themeVersion
    };
  }

  /** The chart series of the current samples (computed once per change of samples). */
  private _series(): Record<GpuMetric, ISeries[]> {
    const version = this._model.samplesVersion;
    const intervalS = this._model.intervalS;
    const cache = this._seriesCache;
    if (cache && cache.version === version && cache.intervalS === intervalS) {
      return cache.series;
    }
    const series = buildAllSeries(this._model.samples, intervalS);
    this._seriesCache = { version, intervalS, series };
    return series;
  }

  /** Run a piece of rendering work, adding its time to the update in progress. */
  private _timed(work: () => void): void {
    const start = now();
    if (this._update === null) {
      this._update = { start, duration: 0 };
    }
    try {
      work();
    } finally {
      const duration = now() - start;
      this._update.duration += duration;
      record(RENDER_FRAME_MEASURE, start, duration);
    }
  }

  /** The update is fully drawn: record its total time. */
  private _finishUpdate(): void {
    const update = this._update;
    if (update !== null) {
      this._update = null;
      record(RENDER_MEASURE, update.start, update.duration);
    }
  }

  private readonly _model: GpuModel;
  private readonly _ownsModel: boolean;
  private readonly _renderer: IChartRenderer | null;
  private readonly _openPath: ((path: string) => void) | null;
  private readonly _themeReader: () => IChartTheme;
  private readonly _scheduleFrame: (callback: () => void) => void;
  private _theme: IChartTheme | null = null;
  private _themeVersion = 0;
  private _drawn: Partial<
    Record<GpuMetric, { samples: number; theme: number }>
  > = {};
  private _nextChart = 0;
  private _framePending = false;
  private _seriesCache: {
    version: number;
    intervalS: number;
    series: Record<GpuMetric, ISeries[]>;
  } | null = null;
  private _update: { start: number; duration: number } | null = null;
  private _ticker: number | null = null;
  private _cardViews = new Map<number, ICardView>();
  private _processRows = new Map<string, IProcessRowView>();
  private _charts = {} as Record<
    GpuMetric,
    { box: HTMLElement; plot: HTMLElement }
  >;
  private _backend!: HTMLElement;
  private _refresh!: HTMLButtonElement;
  private _node!: HTMLElement;
  private _driver!: HTMLElement;
  private _updated!: HTMLElement;
  private _loading!: HTMLElement;
  private _paused!: HTMLElement;
  private _pausedText!: HTMLElement;
  private _resume!: HTMLButtonElement;
  private _error!: HTMLElement;
  private _warning!: HTMLElement;
  private _nogpu!: HTMLElement;
  private _host!: HTMLElement;
  private _hostCpu!: HTMLElement;
  private _hostMem!: HTMLElement;
  private _cards!: HTMLElement;
  private _chartsBox!: HTMLElement;
  private _processes!: HTMLElement;
  private _processBody!: HTMLTableSectionElement;
  private _processEmpty!: HTMLElement;
  private _held!: HTMLElement;
}

/** A reading with every metric unknown (devices known, no sample yet). */
function emptyReading(device: IGpuDevice): IGpuReading {
  return {
    index: device.index,
    util_pct: null,
    mem_util_pct: null,
    mem_used_mb: null,
    mem_total_mb: device.mem_total_mb,
    temp_c: null,
    power_w: null,
    power_limit_w: device.power_limit_w,
    lost: false
  };
}

/** The memory chart's y maximum: the largest GPU's memory in GiB (null: let plotly decide). */
function memoryAxisMax(
  devices: readonly IGpuDevice[],
  samples: readonly ISample[]
): number | null {
  let max = 0;
  for (const device of devices) {
    max = Math.max(max, device.mem_total_mb ?? 0);
  }
  if (max <= 0 && samples.length) {
    for (const gpu of samples[samples.length - 1].gpus) {
      max = Math.max(max, gpu.mem_total_mb ?? 0);
    }
  }
  return max > 0 ? max / 1024 : null;
}

/** A chart layout in the theme's colours. */
export function chartLayout(
  theme: IChartTheme,
  metric: GpuMetric,
  range?: number[]
): IChartLayout {
  const axis = {
    gridcolor: theme.grid,
    linecolor: theme.line,
    zeroline: false,
    tickfont: { color: theme.fontMuted, size: 10 },
    fixedrange: false
  };
  return {
    height: 150,
    margin: { l: 36, r: 8, t: 6, b: 24, pad: 2 },
    paper_bgcolor: theme.background,
    plot_bgcolor: theme.background,
    font: { color: theme.font, family: theme.fontFamily, size: 11 },
    showlegend: false,
    hovermode: 'x',
    hoverlabel: {
      bgcolor: theme.hoverBackground,
      bordercolor: theme.line,
      font: { color: theme.font, family: theme.fontFamily, size: 11 }
    },
    uirevision: metric,
    xaxis: {
      ...axis,
      type: 'date',
      nticks: 4,
      tickangle: 0,
      // one-line time labels: a sidebar has no room for plotly's two-line date labels
      tickformatstops: [
        { dtickrange: [null, 60000], value: '%H:%M:%S' },
        { dtickrange: [60000, 86400000], value: '%H:%M' },
        { dtickrange: [86400000, null], value: '%b %d' }
      ],
      hoverformat: '%H:%M:%S'
    },
    yaxis: {
      ...axis,
      fixedrange: true,
      ...(range ? { range, autorange: false } : { autorange: true }),
      ticksuffix: metric === 'util' ? '%' : ''
    }
  };
}

/** A high-resolution clock (ms). */
function now(): number {
  return typeof performance !== 'undefined' &&
    typeof performance.now === 'function'
    ? performance.now()
    : Date.now();
}

const measureCounts = new Map<string, number>();

/** Record a User Timing measure with an explicit start and duration (where supported). */
function record(name: string, start: number, duration: number): void {
  if (
    typeof performance === 'undefined' ||
    typeof performance.measure !== 'function'
  ) {
    return;
  }
  try {
    performance.measure(name, { start, duration });
  } catch {
    return; // User Timing Level 3 not supported: no figures, no harm
  }
  const count = (measureCounts.get(name) ?? 0) + 1;
  measureCounts.set(name, count);
  if (count > MAX_MEASURES && typeof performance.clearMeasures === 'function') {
    performance.clearMeasures(name);
    measureCounts.set(name, 0);
  }
}

export namespace GpuPanel {
  export interface IOptions {
    /** The model (default: a new one on the real API, disposed with the panel). */
    model?: GpuModel;
    /** Draws the charts; without one the panel has no charts. */
    renderer?: IChartRenderer;
    /** Opens a notebook path (e.g. `docmanager:open`); without it paths are plain text. */
    openPath?: (path: string) => void;
    /** Reads the chart colours (default: JupyterLab's CSS variables). */
    readTheme?: () => IChartTheme;
    /** Runs a callback before the next frame (default: `requestAnimationFrame`). */
    scheduleFrame?: (callback: () => void) => void;
  }
}
