import { MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { APIError } from '../api';
import { MlflowStatusStore } from '../mlflow/status';
import { MlflowOpener } from '../mlflow/ui-opener';
import { MlflowView } from '../mlflow/ui-view';
import { IMlflowStatus } from '../mlflow/types';
import { advance, expectQuietWhileHidden } from './helpers';
import { status } from './mlflow-fixtures';

const ORIGIN = 'http://localhost';

/** A status endpoint answering from a list (the last answer repeats). */
function statusServer(answers: (IMlflowStatus | Error)[]) {
  const server = {
    calls: 0,
    fetch: async (): Promise<IMlflowStatus> => {
      server.calls++;
      const answer = answers.length > 1 ? answers.shift()! : answers[0];
      if (answer instanceof Error) {
        throw answer;
      }
      return answer;
    }
  };
  return server;
}

describe('MlflowView', () => {
  let view: MlflowView;
  const q = (selector: string) =>
    view.node.querySelector(selector) as HTMLElement;
  const text = (selector: string) => q(selector).textContent;

  beforeEach(() => {
    jest.useFakeTimers();
  });

  afterEach(() => {
    view?.dispose();
    jest.useRealTimers();
  });

  function open(server: ReturnType<typeof statusServer>): MlflowView {
    const store = new MlflowStatusStore({ fetch: server.fetch });
    view = new MlflowView({ store, origin: ORIGIN });
    Widget.attach(view, document.body);
    return view;
  }

  it('says MLflow is starting, polls every 2 s and loads the UI when ready', async () => {
    const server = statusServer([
      status({ state: 'starting', elapsed_s: 3.2 }),
      status({ state: 'starting', elapsed_s: 5.3 }),
      status({ state: 'ready' })
    ]);
    open(server);
    view.navigate('#/experiments/1/runs/abc');
    await advance(0);
    expect(view.state).toBe('starting');
    expect(text('.jp-air-mlflow-message-title')).toBe(
      'MLflow is starting (3 s)…'
    );
    expect(view.iframe.hasAttribute('src')).toBe(false);
    expect(q('.jp-air-mlflow-frame').classList).toContain('lm-mod-hidden');

    await advance(2000);
    expect(text('.jp-air-mlflow-message-title')).toBe(
      'MLflow is starting (5 s)…'
    );
    await advance(2000);
    expect(view.state).toBe('ready');
    expect(view.iframe.getAttribute('src')).toBe(
      '/user/alice/air/mlflow/#/experiments/1/runs/abc'
    );
    expect(q('.jp-air-mlflow-message').hidden).toBe(true);
    expect(q('.jp-air-mlflow-frame').classList).not.toContain('lm-mod-hidden');

    // nothing more to wait for
    const calls = server.calls;
    await advance(30_000);
    expect(server.calls).toBe(calls);
  });

  it('sandboxes the iframe with scripts, same-origin, forms, popups and downloads', () => {
    open(statusServer([status()]));
    const sandbox = (view.iframe.getAttribute('sandbox') ?? '').split(' ');
    expect(sandbox).toEqual(
      expect.arrayContaining([
        'allow-scripts',
        'allow-same-origin',
        'allow-forms',
        'allow-popups',
        'allow-downloads'
      ])
    );
  });

  it('navigates the loaded UI to another fragment', async () => {
    open(statusServer([status()]));
    await advance(0);
    expect(view.iframe.getAttribute('src')).toBe('/user/alice/air/mlflow/');
    view.navigate('#/experiments/2/runs/def');
    expect(view.iframe.getAttribute('src')).toBe(
      '/user/alice/air/mlflow/#/experiments/2/runs/def'
    );
    view.navigate('javascript:alert(1)');
    expect(view.iframe.getAttribute('src')).toBe(
      '/user/alice/air/mlflow/#/experiments/2/runs/def'
    );
  });

  it('shows a failed start with the error and the tracking URI, and checks again', async () => {
    const server = statusServer([
      status({
        state: 'failed',
        error: 'mlflow server exited with code 1',
        tracking_uri: 'http://127.0.0.1:5123'
      }),
      status({ state: 'ready' })
    ]);
    open(server);
    await advance(0);
    expect(view.state).toBe('failed');
    expect(q('.jp-air-mlflow-message').getAttribute('role')).toBe('alert');
    expect(text('.jp-air-mlflow-message-detail')).toBe(
      'mlflow server exited with code 1'
    );
    expect(text('.jp-air-mlflow-message-uri')).toBe(
      'Tracking URI: http://127.0.0.1:5123'
    );
    await advance(2000);
    expect(server.calls).toBe(1);
    await advance(8000);
    expect(view.state).toBe('ready');
  });

  it('says when MLflow is stopped or an external server does not answer', async () => {
    const server = statusServer([
      status({ state: 'stopped' }),
      status({
        state: 'external',
        mode: 'external',
        reachable: false,
        ui: '/user/alice/air/mlflow/',
        tracking_uri: 'http://127.0.0.1:5000'
      }),
      status({ state: 'external', mode: 'external', reachable: true })
    ]);
    open(server);
    await advance(0);
    expect(view.state).toBe('failed');
    expect(text('.jp-air-mlflow-message-title')).toBe('MLflow is not running');
    expect(view.iframe.hasAttribute('src')).toBe(false);
    await advance(10_000);
    expect(view.state).toBe('failed');
    expect(text('.jp-air-mlflow-message-title')).toBe('MLflow does not answer');
    expect(text('.jp-air-mlflow-message-uri')).toBe(
      'Tracking URI: http://127.0.0.1:5000'
    );
    await advance(10_000);
    expect(view.state).toBe('ready');
  });

  it('says when a tracking store has no UI', async () => {
    open(
      statusServer([
        status({ state: 'external', ui: null, tracking_uri: 'sqlite:///x.db' })
      ])
    );
    await advance(0);
    expect(view.state).toBe('no-ui');
    expect(text('.jp-air-mlflow-message-uri')).toBe(
      'Tracking URI: sqlite:///x.db'
    );
  });

  it('says when the status cannot be fetched', async () => {
    const server = statusServer([new APIError(404, 'Not Found'), status()]);
    open(server);
    await advance(0);
    expect(view.state).toBe('error');
    expect(text('.jp-air-mlflow-message-detail')).toBe('Not Found (HTTP 404)');
    await advance(10_000);
    expect(view.state).toBe('ready');
  });

  it('says when MLflow is disabled, and stops asking', async () => {
    const server = statusServer([
      status({ state: 'disabled', ui: null, tracking_uri: null })
    ]);
    open(server);
    await advance(0);
    expect(view.state).toBe('disabled');
    expect(text('.jp-air-mlflow-message-title')).toMatch(/disabled/);
    await advance(60_000);
    expect(server.calls).toBe(1);
  });

  it('shows a link for a UI on another origin instead of framing it', async () => {
    open(
      statusServer([
        status({ state: 'external', ui: 'https://mlflow.example.com/' })
      ])
    );
    view.navigate('#/experiments/3/runs');
    await advance(0);
    expect(view.state).toBe('foreign');
    expect(view.iframe.hasAttribute('src')).toBe(false);
    expect(q('.jp-air-mlflow-message-link').getAttribute('href')).toBe(
      'https://mlflow.example.com/#/experiments/3/runs'
    );
  });

  it('frames an absolute UI URL on the same origin', async () => {
    open(
      statusServer([status({ state: 'external', ui: `${ORIGIN}/mlflow/` })])
    );
    await advance(0);
    expect(view.state).toBe('ready');
    expect(view.iframe.getAttribute('src')).toBe(`${ORIGIN}/mlflow/`);
  });

  it('does not poll while hidden', async () => {
    const server = statusServer([status({ state: 'starting', elapsed_s: 1 })]);
    open(server);
    await advance(0);
    expect(server.calls).toBe(1);
    await expectQuietWhileHidden(view, () => server.calls, 20_000);
  });
});

describe('MlflowOpener', () => {
  let added: MainAreaWidget<MlflowView>[];
  let activated: MainAreaWidget<MlflowView>[];
  let windows: string[];
  let windowResult: Window | null;

  beforeEach(() => {
    jest.useFakeTimers();
    added = [];
    activated = [];
    windows = [];
    windowResult = {} as Window;
  });

  afterEach(() => {
    added.forEach(w => w.dispose());
    jest.useRealTimers();
  });

  function opener(server: ReturnType<typeof statusServer>): MlflowOpener {
    return new MlflowOpener({
      store: new MlflowStatusStore({ fetch: server.fetch }),
      addTab: widget => {
        added.push(widget);
        Widget.attach(widget, document.body);
      },
      activate: widget => activated.push(widget),
      openWindow: url => {
        windows.push(url);
        return windowResult;
      },
      origin: ORIGIN
    });
  }

  it('opens one MLflow tab and reuses it, navigating to the fragment', async () => {
    const o = opener(statusServer([status()]));
    const first = await o.open('#/experiments/1/runs/abc');
    await advance(0);
    expect(first).not.toBeNull();
    expect(first!.title.label).toBe('MLflow');
    expect(first!.content.iframe.getAttribute('src')).toBe(
      '/user/alice/air/mlflow/#/experiments/1/runs/abc'
    );
    const second = await o.open('#/experiments/1/runs/def');
    expect(second).toBe(first);
    expect(added).toHaveLength(1);
    expect(activated).toHaveLength(2);
    expect(first!.content.iframe.getAttribute('src')).toBe(
      '/user/alice/air/mlflow/#/experiments/1/runs/def'
    );
    expect(windows).toEqual([]);

    // closed: the next open makes a new tab
    first!.dispose();
    const third = await o.open();
    expect(third).not.toBe(first);
    expect(added).toHaveLength(2);
  });

  it('opens a UI on another origin in a new browser tab', async () => {
    const o = opener(
      statusServer([
        status({ state: 'external', ui: 'https://mlflow.example.com/' })
      ])
    );
    const widget = await o.open('#/experiments/1/runs/abc');
    expect(widget).toBeNull();
    expect(windows).toEqual([
      'https://mlflow.example.com/#/experiments/1/runs/abc'
    ]);
    expect(added).toHaveLength(0);
  });

  it('falls back to a tab with a link when the browser blocks the new tab', async () => {
    windowResult = null;
    const o = opener(
      statusServer([
        status({ state: 'external', ui: 'https://mlflow.example.com/' })
      ])
    );
    const widget = await o.open('#/experiments/1/runs/abc');
    await advance(0);
    expect(widget).not.toBeNull();
    expect(widget!.content.state).toBe('foreign');
    expect(
      widget!.node
        .querySelector('.jp-air-mlflow-message-link')!
        .getAttribute('href')
    ).toBe('https://mlflow.example.com/#/experiments/1/runs/abc');
  });

  it('does not open browser tabs when restoring the layout', async () => {
    const o = opener(
      statusServer([
        status({ state: 'external', ui: 'https://mlflow.example.com/' })
      ])
    );
    const widget = await o.open(null, { allowWindow: false });
    expect(windows).toEqual([]);
    expect(widget).not.toBeNull();
  });

  it('shows the tab while MLflow is starting', async () => {
    const o = opener(
      statusServer([status({ state: 'starting', elapsed_s: 12 })])
    );
    const widget = await o.open('#/experiments/1/runs/abc');
    await advance(0);
    expect(widget!.content.state).toBe('starting');
    expect(
      widget!.node.querySelector('.jp-air-mlflow-message-title')!.textContent
    ).toBe('MLflow is starting (12 s)…');
  });
});
