/**
 * The Logs tab on the MLflow UI's run pages, as the proxy serves them: watches MLflow's hash
 * route, asks the server whether the run shown is an attempt of a job run (404: it is not, and
 * nothing is added), and adds the Logs tab beside MLflow's tabs — or, on a page without a tab list
 * of the expected shape, a small fixed "Logs" link to the job run in JupyterLab. Nothing here may
 * break MLflow's page: every error is caught and logged to the console.
 */
import { defaultFilters } from '../logs/query';
import { ILogPage } from '../logs/types';
import { workloadUrl } from '../workloads/url';
import { RunLogsClient, RunLogsError, normalizeBase } from './client';
import { LogsPanel } from './panel';
import { IRunRoute, parseRunRoute } from './route';
import { addStyles } from './styles';
import { LogsTab, fallbackLink, findRunPageShape } from './tab';

/** How long a job-backed run page may take to show its tab list before the fallback link. */
export const FALLBACK_AFTER_MS = 10_000;

/** What the server said about a run. */
type Probe = 'pending' | 'none' | 'logs' | 'denied' | 'error';

interface IRunState {
  route: IRunRoute;
  probe: Probe;
  page: ILogPage | null;
  denied: string | null;
  /** When the server answered (ms, performance clock). */
  answeredAt: number;
  panel: LogsPanel | null;
  tab: LogsTab | null;
  link: HTMLAnchorElement | null;
  timer: number;
}

export interface IRunPageLogsOptions {
  baseUrl: string;
  client?: RunLogsClient;
  fallbackAfterMs?: number;
  /** Options of each panel (tests: no waiting, a clipboard). */
  panel?: Partial<
    Pick<
      ConstructorParameters<typeof LogsPanel>[0],
      'copy' | 'waitS' | 'retryMs'
    >
  >;
}

export class RunPageLogs {
  constructor(options: IRunPageLogsOptions) {
    this.baseUrl = normalizeBase(options.baseUrl);
    this.client = options.client ?? new RunLogsClient(this.baseUrl);
    this._fallbackAfterMs = options.fallbackAfterMs ?? FALLBACK_AFTER_MS;
    this._panelOptions = options.panel ?? {};
  }

  readonly baseUrl: string;
  readonly client: RunLogsClient;

  /** The state of the run shown (tests). */
  get current(): Readonly<IRunState> | null {
    return this._run;
  }

  /** Start watching the page. */
  start(): void {
    addStyles();
    window.addEventListener('hashchange', this._onHashChange);
    this._observer = new MutationObserver(() => this._schedule());
    this._observer.observe(document.body, { childList: true, subtree: true });
    this.sync();
  }

  stop(): void {
    window.removeEventListener('hashchange', this._onHashChange);
    this._observer?.disconnect();
    this._observer = null;
    window.clearTimeout(this._scheduled);
    this._clear();
  }

  /** Bring the page in line with the route and the DOM (never throws). */
  sync(): void {
    try {
      this._sync();
    } catch (error) {
      console.warn('jupyter-air: the Logs tab', error);
    }
  }

  /** Resolves when the server's answer about the run shown has been acted on (tests). */
  get probed(): Promise<void> {
    return this._probing;
  }

  private _sync(): void {
    const route = parseRunRoute(window.location.hash);
    if (route === null) {
      this._clear();
      return;
    }
    if (this._run === null || this._run.route.runId !== route.runId) {
      this._clear();
      this._probe(route);
      return;
    }
    const run = this._run;
    if (run.probe !== 'logs' && run.probe !== 'denied') {
      return;
    }
    if (run.tab !== null && run.tab.attached) {
      return;
    }
    let wasActive = false;
    if (run.tab !== null) {
      // MLflow drew its page again: put the tab back (showing the logs if it did)
      wasActive = run.tab.active;
      run.tab.dispose();
      run.tab = null;
    }
    const shape = findRunPageShape(document);
    if (shape !== null) {
      run.link?.remove();
      run.link = null;
      const panel = this._panel(run);
      panel.node.remove();
      const tab = new LogsTab(
        shape,
        panel.node,
        () => panel.show(),
        () => panel.hide()
      );
      tab.attach();
      run.tab = tab;
      if (wasActive) {
        tab.show();
      }
      return;
    }
    const waited = performance.now() - run.answeredAt;
    if (
      run.link === null &&
      run.page !== null &&
      waited >= this._fallbackAfterMs
    ) {
      const href =
        workloadUrl(run.page.job_id, this.baseUrl) ?? `${this.baseUrl}lab`;
      run.link = fallbackLink(href);
      document.body.append(run.link);
    }
  }

  private _panel(run: IRunState): LogsPanel {
    if (run.panel === null) {
      run.panel = new LogsPanel({
        ...this._panelOptions,
        client: this.client,
        runId: run.route.runId,
        first: run.page,
        denied: run.denied
      });
    }
    return run.panel;
  }

  private _probe(route: IRunRoute): void {
    const run: IRunState = {
      route,
      probe: 'pending',
      page: null,
      denied: null,
      answeredAt: 0,
      panel: null,
      tab: null,
      link: null,
      timer: 0
    };
    this._run = run;
    this._probing = this.client
      .logs(route.runId, defaultFilters(), { tail: true, limit: 1 })
      .then(
        page => {
          run.probe = 'logs';
          run.page = page;
        },
        error => {
          if (error instanceof RunLogsError && error.status === 404) {
            run.probe = 'none';
          } else if (error instanceof RunLogsError && error.status === 403) {
            run.probe = 'denied';
            run.denied = error.message;
          } else {
            run.probe = 'error';
            console.warn('jupyter-air: the logs of this run', error);
          }
        }
      )
      .then(() => {
        if (this._run !== run) {
          return;
        }
        run.answeredAt = performance.now();
        run.timer = window.setTimeout(
          () => this.sync(),
          this._fallbackAfterMs + 50
        );
        this.sync();
      });
  }

  private _clear(): void {
    const run = this._run;
    this._run = null;
    if (run === null) {
      return;
    }
    try {
      window.clearTimeout(run.timer);
      run.tab?.dispose();
      run.panel?.dispose();
      run.link?.remove();
    } catch (error) {
      console.warn('jupyter-air: the Logs tab', error);
    }
  }

  private _schedule(): void {
    if (this._scheduled) {
      return;
    }
    this._scheduled = window.setTimeout(() => {
      this._scheduled = 0;
      this.sync();
    }, 50);
  }

  private readonly _onHashChange = (): void => {
    // the Logs tab never changes the route: a new route is MLflow's page again
    try {
      this._run?.tab?.hide();
    } catch (error) {
      console.warn('jupyter-air: the Logs tab', error);
    }
    this.sync();
  };

  private readonly _fallbackAfterMs: number;
  private readonly _panelOptions: NonNullable<IRunPageLogsOptions['panel']>;
  private _run: IRunState | null = null;
  private _observer: MutationObserver | null = null;
  private _scheduled = 0;
  private _probing: Promise<void> = Promise.resolve();
}
