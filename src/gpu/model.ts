/**
 * The GPU Resources panel's state, without any DOM: the cluster overview (every node's latest
 * values), the node the user picked, what the server said last about the node shown, its merged
 * sample history, and when to ask again.
 *
 * Why a separate model: polling, idleness and history merging are the parts that are easy to get
 * subtly wrong (requests while hidden, gaps after a pause, unbounded growth), so they live here
 * where jest can drive them with a fake clock, fake timers and a fake fetch.
 *
 * - Each poll asks for the overview (`gpu/nodes`, then `since=<now of the last answer>`: only the
 *   nodes that changed). With more than one node and none picked, that is all the panel shows;
 *   otherwise it also asks for the node shown (the one picked, else the Jupyter host's): the
 *   whole window first, later `since=<t of newest sample>`, merged (de-duplicated by `t`, trimmed
 *   to `history_s` before the newest sample). Picking another node starts its history afresh.
 * - While started (the panel is shown) it polls every `interval_s` (a `Poller`: nothing while
 *   the browser tab is hidden, backing off while the server fails); stopped, it sends nothing.
 * - Without user activity for `idle_timeout_s` it stops polling and becomes 'paused' (the server
 *   then pauses its own sampling too) until `resume()`, `refresh()` or a restart. The poller
 *   wakes up at the idle deadline when it comes before the next poll, so the pause is on time.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { describeError } from '../api';
import { Poller } from '../common/poller';
import { GpuFetcher, OverviewFetcher, fetchGpu, fetchOverview } from './api';
import { mergeSamples, sameSamples, trimSamples } from './history';
import { IClusterOverview, IGpuPayload, INodeSummary, ISample } from './types';

/** Defaults used until the server has said otherwise. */
export const DEFAULT_INTERVAL_S = 10;
export const DEFAULT_IDLE_TIMEOUT_S = 300;
export const DEFAULT_HISTORY_S = 7200;

/** What the panel shows overall. */
export type GpuStatus = 'loading' | 'live' | 'paused' | 'error';

/**
 * What the panel shows: every node ('overview'), one node ('node'), or nothing yet (`null`: no
 * overview yet, so it is not known whether there is more than one node).
 */
export type GpuView = 'overview' | 'node' | null;

/** Whether a node's answer carries GPU readings (a backend that reads GPUs). */
export function hasGpuData(
  payload: { backend?: string | null } | null | undefined
): boolean {
  return (
    !!payload && (payload.backend === 'nvml' || payload.backend === 'simulated')
  );
}

/** A positive number from the server, or the default. */
function positive(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? value
    : fallback;
}

/** The GPU telemetry state behind one GPU Resources panel. */
export class GpuModel implements IDisposable {
  constructor(options: GpuModel.IOptions = {}) {
    this._fetcher = options.fetch ?? fetchGpu;
    this._overviewFetcher = options.fetchOverview ?? fetchOverview;
    this._now = options.now ?? (() => Date.now());
    this._lastActivity = this._now();
    this._poller = new Poller({
      name: 'jupyter-air:gpu',
      poll: () => this._tick(),
      interval: () => this._untilNextTick()
    });
  }

  /** Emitted after every change of data or state. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted when the user picks a node (`null`: back to the overview). */
  get selectionChanged(): ISignal<this, string | null> {
    return this._selectionChanged;
  }

  /** The node the user picked, `null` for none (the overview, or the only node). */
  get selectedNode(): string | null {
    return this._selected;
  }

  /** What the panel shows now. */
  get view(): GpuView {
    if (this._selected !== null) {
      return 'node';
    }
    if (this._overview === null) {
      return null;
    }
    return this._nodeNames.length > 1 ? 'overview' : 'node';
  }

  /** Whether there is more than one node (the panel then offers a way between them). */
  get isCluster(): boolean {
    return this._nodeNames.length > 1;
  }

  /** The last overview answer (its `nodes` is only what that answer carried). */
  get overview(): IClusterOverview | null {
    return this._overview;
  }

  /** Every node's name, sorted as the server sorts them (by name). */
  get nodeNames(): readonly string[] {
    return this._nodeNames;
  }

  /** Every node's latest values, in `nodeNames` order (a node not described yet is left out). */
  get nodes(): readonly INodeSummary[] {
    const nodes: INodeSummary[] = [];
    for (const name of this._nodeNames) {
      const node = this._nodes.get(name);
      if (node) {
        nodes.push(node);
      }
    }
    return nodes;
  }

  /** Incremented whenever the overview's nodes change. */
  get overviewVersion(): number {
    return this._overviewVersion;
  }

  /**
   * Show one node (`null`: none, back to the overview): its history is fetched afresh, now when
   * the panel is shown. Counts as activity.
   */
  setNode(node: string | null): void {
    const name = node === '' ? null : node;
    if (this._isDisposed || name === this._selected) {
      return;
    }
    this._selected = name;
    this._generation++;
    this._payload = null;
    this._fetchedAt = null;
    this._error = null;
    if (this._samples.length) {
      this._samples = [];
      this._samplesVersion++;
    }
    this._selectionChanged.emit(name);
    this._changed.emit();
    if (this._started) {
      this._wake();
    }
  }

  /**
   * The node picked in an earlier session, being read (the layout's saved state): no request is
   * sent until it is known, so the panel opens on that node rather than flashing another view.
   */
  restoreNode(pending: Promise<string | null | undefined>): void {
    const restoring = pending
      .then(
        node => {
          if (node && this._selected === null && !this._isDisposed) {
            this._selected = node;
            this._changed.emit();
          }
        },
        reason =>
          console.warn('jupyter-air: cannot read the saved node', reason)
      )
      .finally(() => {
        if (this._restoring === restoring) {
          this._restoring = null;
        }
      });
    this._restoring = restoring;
  }

  /** The merged history, oldest first, within `history_s` of the newest sample. */
  get samples(): readonly ISample[] {
    return this._samples;
  }

  /** Incremented whenever `samples` changes (so views can skip unchanged charts). */
  get samplesVersion(): number {
    return this._samplesVersion;
  }

  /** The last answer of the server (its `samples` is only what that answer carried). */
  get payload(): IGpuPayload | null {
    return this._payload;
  }

  /** The newest sample, with its processes; `null` before the first sample. */
  get latest(): ISample | null {
    return this._payload?.latest ?? null;
  }

  /** 'loading' before the first answer, 'paused' when idle, 'error' after a failed call. */
  get status(): GpuStatus {
    if (this._paused) {
      return 'paused';
    }
    if (this._error !== null) {
      return 'error';
    }
    const view = this.view;
    const answered =
      view === 'overview' || (view === 'node' && !!this._payload);
    return answered ? 'live' : 'loading';
  }

  /** The message of the last failed call, `null` once a call succeeds. */
  get error(): string | null {
    return this._error;
  }

  /** Whether the model is polling (the panel is shown). */
  get isStarted(): boolean {
    return this._started;
  }

  /** Whether it waits on the server that failed (`failures` calls in a row, backing off). */
  get failures(): number {
    return this._poller.failures;
  }

  /** Whether a call is in flight. */
  get isBusy(): boolean {
    return this._inFlight > 0;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Seconds between polls (from the server: the node shown, else the Jupyter host). */
  get intervalS(): number {
    return positive(
      this._payload?.interval_s ?? this._overview?.interval_s,
      DEFAULT_INTERVAL_S
    );
  }

  /** Seconds without activity before polling pauses (from the server). */
  get idleTimeoutS(): number {
    return positive(
      this._payload?.idle_timeout_s ?? this._overview?.idle_timeout_s,
      DEFAULT_IDLE_TIMEOUT_S
    );
  }

  /** Seconds of history kept (from the server). */
  get historyS(): number {
    return positive(this._payload?.history_s, DEFAULT_HISTORY_S);
  }

  /**
   * Age of the newest sample in seconds, now: the server's `now - latest.t` at answer time plus
   * the time elapsed here since (so clock skew between browser and server does not matter).
   */
  secondsSinceUpdate(): number | null {
    if (this.view === 'overview') {
      return this._overviewAge();
    }
    const payload = this._payload;
    if (!payload || !payload.latest || this._fetchedAt === null) {
      return null;
    }
    const age = payload.now - payload.latest.t;
    const elapsed = (this._now() - this._fetchedAt) / 1000;
    return Math.max(0, age + elapsed);
  }

  /** Seconds since any node last reported, now (the overview's "updated N s ago"). */
  private _overviewAge(): number | null {
    const overview = this._overview;
    if (!overview || this._overviewFetchedAt === null) {
      return null;
    }
    let newest = -Infinity;
    for (const node of this._nodes.values()) {
      newest = Math.max(newest, node.last_seen ?? -Infinity);
    }
    if (!Number.isFinite(newest)) {
      return null;
    }
    const elapsed = (this._now() - this._overviewFetchedAt) / 1000;
    return Math.max(0, overview.now - newest + elapsed);
  }

  /** Start polling (the panel is shown): counts as activity, fetches now. */
  start(): void {
    if (this._isDisposed || this._started) {
      return;
    }
    this._started = true;
    this._wake();
  }

  /** Stop polling (the panel is hidden): no more requests until `start()`. */
  stop(): void {
    if (!this._started) {
      return;
    }
    this._started = false;
    this._poller.stop();
  }

  /** The user did something: postpones the idle pause. */
  noteActivity(): void {
    this._lastActivity = this._now();
  }

  /** Leave the idle pause: fetch now and poll again. */
  resume(): void {
    if (this._isDisposed) {
      return;
    }
    this._wake();
  }

  /** Ask the server to sample now (`POST gpu/refresh`) and merge the answer. */
  async refresh(): Promise<void> {
    if (this._isDisposed) {
      return;
    }
    this._lastActivity = this._now();
    if (this._paused) {
      this._paused = false;
      this._changed.emit();
    }
    if (this._started) {
      this._poller.start(); // out of the pause: polls again after this one
    }
    await this._poller.run(async () => {
      await this._poll(true);
      this._nextPollAt = this._now() + this.intervalS * 1000;
    });
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._started = false;
    this._poller.dispose();
    Signal.clearData(this);
  }

  /** Activity now, out of the idle pause, the next poll due at once (now, when started). */
  private _wake(): void {
    this._lastActivity = this._now();
    const wasPaused = this._paused;
    this._paused = false;
    this._nextPollAt = 0;
    if (wasPaused) {
      this._changed.emit();
    }
    if (this._started) {
      this._poller.stop();
      this._poller.start();
    }
  }

  /** One tick of the poller: pause if idle, nothing if it is not time yet, else fetch. */
  private async _tick(): Promise<void> {
    if (this._restoring) {
      await this._restoring;
    }
    if (!this._started || this._paused || this._isDisposed) {
      return;
    }
    const now = this._now();
    if (now - this._lastActivity >= this.idleTimeoutS * 1000) {
      this._paused = true;
      this._poller.stop();
      this._changed.emit();
      return;
    }
    if (now < this._nextPollAt) {
      return; // woken for an idle deadline that activity postponed
    }
    try {
      await this._poll(false);
    } finally {
      this._nextPollAt = this._now() + this.intervalS * 1000;
    }
  }

  /**
   * Milliseconds until the poller's next tick: the next poll or the idle deadline, whichever
   * comes first (so the pause happens on time, not up to an interval late).
   */
  private _untilNextTick(): number | null {
    if (!this._started || this._paused || this._isDisposed) {
      return null;
    }
    const idleAt = this._lastActivity + this.idleTimeoutS * 1000;
    return Math.max(0, Math.min(this._nextPollAt, idleAt) - this._now());
  }

  /**
   * One poll: the overview, then the node shown (when one is). Merges the answers, or records
   * the error and rethrows it (the poller backs off).
   */
  private async _poll(refresh: boolean): Promise<void> {
    if (this._isDisposed) {
      return;
    }
    this._inFlight++;
    try {
      await this._fetchOverview();
      if (this.view === 'node') {
        await this._fetchNode(refresh);
      }
      if (!this._isDisposed) {
        this._error = null;
      }
    } catch (error) {
      if (!this._isDisposed) {
        this._error = describeError(error);
        throw error;
      }
    } finally {
      this._inFlight--;
      if (!this._isDisposed) {
        this._changed.emit();
      }
    }
  }

  /** Ask for the nodes that changed since the last overview and merge them. */
  private async _fetchOverview(): Promise<void> {
    const since = this._overview?.now ?? null;
    const overview = await this._overviewFetcher(since);
    if (this._isDisposed) {
      return;
    }
    this._overviewFetchedAt = this._now();
    this._overview = overview;
    const names = Array.isArray(overview.node_names) ? overview.node_names : [];
    if (since === null) {
      this._nodes.clear();
    }
    for (const node of Array.isArray(overview.nodes) ? overview.nodes : []) {
      this._nodes.set(node.node, node);
    }
    const known = new Set(names);
    for (const name of Array.from(this._nodes.keys())) {
      if (!known.has(name)) {
        this._nodes.delete(name);
      }
    }
    this._nodeNames = names.slice();
    this._overviewVersion++;
  }

  /** Ask for the node shown (the history newer than what is here) and merge it. */
  private async _fetchNode(refresh: boolean): Promise<void> {
    const generation = this._generation;
    const since = this._samples.length
      ? this._samples[this._samples.length - 1].t
      : null;
    const payload = await this._fetcher({
      since,
      refresh,
      node: this._selected
    });
    if (!this._isDisposed && generation === this._generation) {
      this._apply(payload, since);
    }
  }

  /** Take in one answer of the server. */
  private _apply(payload: IGpuPayload, since: number | null): void {
    this._payload = payload;
    this._fetchedAt = this._now();
    const incoming = Array.isArray(payload.samples) ? payload.samples : [];
    let merged =
      since === null
        ? mergeSamples([], incoming)
        : mergeSamples(this._samples, incoming);
    if (payload.latest && Number.isFinite(payload.latest.t)) {
      const newest = merged.length ? merged[merged.length - 1].t : -Infinity;
      if (payload.latest.t > newest) {
        merged = mergeSamples(merged, [payload.latest]);
      }
    }
    merged = trimSamples(merged, this.historyS);
    if (!sameSamples(merged, this._samples)) {
      this._samples = merged;
      this._samplesVersion++;
    }
  }

  private readonly _changed = new Signal<this, void>(this);
  private readonly _selectionChanged = new Signal<this, string | null>(this);
  private readonly _fetcher: GpuFetcher;
  private readonly _overviewFetcher: OverviewFetcher;
  private _overview: IClusterOverview | null = null;
  private _overviewFetchedAt: number | null = null;
  private _nodes = new Map<string, INodeSummary>();
  private _nodeNames: string[] = [];
  private _overviewVersion = 0;
  private _selected: string | null = null;
  private _generation = 0;
  private _restoring: Promise<void> | null = null;
  private readonly _now: () => number;
  private readonly _poller: Poller;
  private _samples: ISample[] = [];
  private _samplesVersion = 0;
  private _payload: IGpuPayload | null = null;
  private _fetchedAt: number | null = null;
  private _error: string | null = null;
  private _started = false;
  private _paused = false;
  private _lastActivity: number;
  private _nextPollAt = 0;
  private _inFlight = 0;
  private _isDisposed = false;
}

export namespace GpuModel {
  export interface IOptions {
    /** Calls the GPU API for one node; defaults to the real server. */
    fetch?: GpuFetcher;
    /** Asks for the cluster overview; defaults to the real server. */
    fetchOverview?: OverviewFetcher;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
  }
}
