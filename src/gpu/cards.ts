/**
 * The per-GPU cards of the GPU panel: name, utilisation and memory meters, temperature and
 * power of each GPU in the newest sample, or a "lost" badge for a GPU that stopped answering;
 * a "flagged" badge with the reasons in words when its health says the GPU is suspect, its
 * health details (health.ts) and its MIG instances.
 *
 * Cards are kept by GPU index between updates and only changed text is written.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import {
  h,
  placeViews,
  setAttr,
  setHidden,
  setMeter,
  setText
} from '../common/dom';
import { num } from '../common/text';
import {
  formatMemory,
  formatPercent,
  formatPower,
  formatTemperature,
  notAvailable
} from './format';
import { flagTexts, healthLines, migLines, setLines } from './health';
import { hasGpuData } from './model';
import { gpuColor } from './theme';
import { IGpuDevice, IGpuPayload, IGpuReading, ISample } from './types';

/** The DOM of one GPU card, kept between updates. */
interface ICardView {
  root: HTMLElement;
  name: HTMLElement;
  lost: HTMLElement;
  flagged: HTMLElement;
  flags: HTMLElement;
  health: HTMLDetailsElement;
  healthList: HTMLElement;
  /** The labels of the health lines shown (they change only with the kind of health). */
  healthSignature: string;
  mig: HTMLElement;
  metrics: HTMLElement;
  util: HTMLElement;
  utilFill: HTMLElement;
  mem: HTMLElement;
  memFill: HTMLElement;
  temp: HTMLElement;
  power: HTMLElement;
}

/** The cards of all GPUs. */
export class GpuCards {
  constructor(trans: TranslationBundle) {
    this._trans = trans;
  }

  /** The cards' container. */
  readonly node = h('div', 'jp-air-gpu-cards');

  /**
   * One card per GPU of the newest sample, in its order; before the first sample, one empty
   * card per known device. No card without GPU data (`backend: 'none'`, or not known yet).
   */
  render(payload: IGpuPayload | null, latest: ISample | null): void {
    const devices = new Map<number, IGpuDevice>();
    for (const device of payload?.devices ?? []) {
      devices.set(device.index, device);
    }
    let readings: IGpuReading[] = [];
    if (hasGpuData(payload)) {
      if (latest) {
        readings = latest.gpus ?? [];
      } else {
        readings = Array.from(devices.values()).map(device =>
          emptyReading(device)
        );
      }
    }
    const seen = new Set<number>();
    const roots: HTMLElement[] = [];
    for (const reading of readings) {
      seen.add(reading.index);
      let card = this._views.get(reading.index);
      if (!card) {
        card = createCard(this._trans, reading.index);
        this._views.set(reading.index, card);
      }
      updateCard(this._trans, card, reading, devices.get(reading.index));
      roots.push(card.root);
    }
    // keep DOM order = reading order, moving nodes only when needed
    placeViews(this.node, roots, this._views, seen);
  }

  private readonly _trans: TranslationBundle;
  private _views = new Map<number, ICardView>();
}

/** Build the DOM of one GPU's card. */
function createCard(trans: TranslationBundle, index: number): ICardView {
  const root = h('div', 'jp-air-gpu-card');
  root.dataset.gpuIndex = String(index);
  const head = h('div', 'jp-air-gpu-card-head');
  const swatch = h('span', 'jp-air-gpu-swatch');
  swatch.style.backgroundColor = gpuColor(index);
  const label = h('span', 'jp-air-gpu-index', trans.__('GPU %1', index));
  const name = h('span', 'jp-air-gpu-name');
  const lost = h('span', 'jp-air-gpu-lost', trans.__('lost'));
  lost.title = trans.__('This GPU stopped answering');
  lost.hidden = true;
  const flagged = h('span', 'jp-air-gpu-flagged', trans.__('flagged'));
  flagged.hidden = true;
  head.append(swatch, label, name, lost, flagged);
  const flags = h('ul', 'jp-air-gpu-flags');
  flags.setAttribute('aria-label', trans.__('Health flags'));
  flags.hidden = true;

  const metrics = h('div', 'jp-air-gpu-card-metrics');
  const row = (
    labelText: string,
    cls: string,
    meter: boolean
  ): [HTMLElement, HTMLElement] => {
    const metric = h('div', 'jp-air-gpu-metric');
    const value = h('span', `${cls} jp-air-gpu-value`, notAvailable(trans));
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
  const [util, utilFill] = row(
    trans.__('Utilisation'),
    'jp-air-gpu-util',
    true
  );
  const [mem, memFill] = row(trans.__('Memory'), 'jp-air-gpu-mem', true);
  const [temp] = row(trans.__('Temperature'), 'jp-air-gpu-temp', false);
  const [power] = row(trans.__('Power'), 'jp-air-gpu-power', false);
  const health = h('details', 'jp-air-gpu-health');
  health.append(h('summary', 'jp-air-gpu-health-title', trans.__('Health')));
  const healthList = h('dl', 'jp-air-gpu-health-list');
  health.append(healthList);
  const mig = h('ul', 'jp-air-gpu-mig');
  mig.setAttribute('aria-label', trans.__('MIG instances'));
  mig.hidden = true;
  root.append(head, flags, metrics, mig, health);
  return {
    root,
    name,
    lost,
    flagged,
    flags,
    health,
    healthList,
    healthSignature: '',
    mig,
    metrics,
    util,
    utilFill,
    mem,
    memFill,
    temp,
    power
  };
}

/** Write one reading into a card (a lost GPU shows its badge and no numbers). */
function updateCard(
  trans: TranslationBundle,
  card: ICardView,
  reading: IGpuReading,
  device: IGpuDevice | undefined
): void {
  const name = device?.name || trans.__('GPU');
  setText(card.name, name);
  setAttr(card.name, 'title', device?.uuid ? `${name}\n${device.uuid}` : name);
  const lost = !!reading.lost;
  card.root.classList.toggle('jp-mod-lost', lost);
  setHidden(card.lost, !lost);
  setHidden(card.metrics, lost);
  setHidden(card.health, lost);
  const reasons = lost ? [] : flagTexts(trans, reading.health);
  card.root.classList.toggle('jp-mod-flagged', reasons.length > 0);
  setHidden(card.flagged, reasons.length === 0);
  setAttr(card.flagged, 'title', reasons.join('\n'));
  setLines(card.flags, reasons, 'jp-air-gpu-flag');
  if (lost) {
    setLines(card.mig, [], 'jp-air-gpu-mig-item');
    return;
  }
  renderHealth(trans, card, reading);
  setLines(
    card.mig,
    migLines(trans, reading.mig ?? [], device?.mig ?? [], (used, total) =>
      formatMemory(trans, used, total)
    ),
    'jp-air-gpu-mig-item'
  );
  const memTotal = reading.mem_total_mb ?? device?.mem_total_mb ?? null;
  const powerLimit = reading.power_limit_w ?? device?.power_limit_w ?? null;
  setText(card.util, formatPercent(trans, reading.util_pct));
  setMeter(card.utilFill, reading.util_pct);
  setText(card.mem, formatMemory(trans, reading.mem_used_mb, memTotal));
  const memUsed = num(reading.mem_used_mb);
  setMeter(
    card.memFill,
    memUsed !== null && memTotal ? (memUsed / memTotal) * 100 : null
  );
  setText(card.temp, formatTemperature(trans, reading.temp_c));
  setText(card.power, formatPower(trans, reading.power_w, powerLimit));
}

/** The health details of a card: its lines kept, their text written when it changed. */
function renderHealth(
  trans: TranslationBundle,
  card: ICardView,
  reading: IGpuReading
): void {
  const lines = healthLines(trans, reading.health);
  const labels = lines.map(([label]) => label).join('\n');
  if (labels !== card.healthSignature) {
    card.healthSignature = labels;
    card.healthList.replaceChildren(
      ...lines.flatMap(([label]) => [
        h('dt', 'jp-air-gpu-health-label', label),
        h('dd', 'jp-air-gpu-health-value')
      ])
    );
  }
  lines.forEach(([, value], i) => {
    setText(card.healthList.children[2 * i + 1] as HTMLElement, value);
  });
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
