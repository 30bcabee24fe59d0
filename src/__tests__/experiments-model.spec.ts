import { APIError } from '../api';
import {
  ExperimentsModel,
  IDLE_POLL_MS,
  RUNNING_POLL_MS,
  STARTING_POLL_MS
} from '../experiments/model';
import { nestRuns } from '../experiments/tree';
import { runsQueryString } from '../mlflow/api';
import { MlflowStatusStore } from '../mlflow/status';
import { advance, expectNextCallAfter } from './helpers';
import {
  FakeRunsServer,
  T0_MS,
  mlflowDownPayload,
  run,
  runsPayload,
  status
} from './mlflow-fixtures';

describe('nestRuns', () => {
  it('nests child runs under their parents, keeping the order', () => {
    const runs = [
      run('p1'),
      run('c1', { parent_run_id: 'p1' }),
      run('p2'),
      run('g1', { parent_run_id: 'c1' }),
      run('c2', { parent_run_id: 'p1' }),
      run('orphan', { parent_run_id: 'gone' })
    ];
    const tree = nestRuns(runs);
    const shape = (nodes: ReturnType<typeof nestRuns>): unknown =>
      nodes.map(n =>
        n.children.length ? [n.run.run_id, shape(n.children)] : n.run.run_id
      );
    expect(shape(tree)).toEqual([
      ['p1', [['c1', ['g1']], 'c2']],
      'p2',
      'orphan'
    ]);
  });

  it('makes runs in a parent cycle top-level runs', () => {
    const tree = nestRuns([
      run('a', { parent_run_id: 'b' }),
      run('b', { parent_run_id: 'a' }),
      run('self', { parent_run_id: 'self' }),
      run('c', { parent_run_id: 'a' })
    ]);
    expect(tree.map(n => n.run.run_id)).toEqual(['a', 'b', 'self']);
    expect(tree[0].children.map(n => n.run.run_id)).toEqual(['c']);
  });
});

describe('runsQueryString', () => {
  it('asks for a notebook or an experiment, with status and limit', () => {
    expect(runsQueryString({ notebook: 'dir/my nb.ipynb', limit: 100 })).toBe(
      'notebook=dir%2Fmy+nb.ipynb&limit=100'
    );
    expect(
      runsQueryString({ experiment_id: '7', notebook: 'x', status: 'RUNNING' })
    ).toBe('experiment_id=7&status=RUNNING');
  });
});

describe('ExperimentsModel', () => {
  let server: FakeRunsServer;
  let store: MlflowStatusStore;
  let model: ExperimentsModel;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_MS });
    server = new FakeRunsServer();
    store = new MlflowStatusStore({ fetch: async () => status() });
    model = server.model({ store });
  });
  const calls = () => server.calls.length;

  /** The model started on notebook `a.ipynb`, once its first answer is in. */
  async function startOnNotebook(): Promise<void> {
    model.setNotebook('a.ipynb');
    model.start();
    await advance(0);
  }

  afterEach(() => {
    model.dispose();
    jest.useRealTimers();
  });

  it('says to open a notebook, and asks nothing, without one', async () => {
    model.start();
    await advance(60_000);
    expect(model.state).toBe('no-notebook');
    expect(model.query).toBeNull();
    expect(server.calls).toEqual([]);
  });

  it("asks for the active notebook's runs and follows notebook switches", async () => {
    await startOnNotebook();
    expect(server.calls).toEqual([{ notebook: 'a.ipynb', limit: 100 }]);
    expect(model.state).toBe('runs');
    expect(model.experimentName).toBe('/Users/ada/a.ipynb');
    expect(store.latest).toEqual(status());

    model.setNotebook('b.ipynb');
    // the old answer is gone at once: no runs of a under b's name
    expect(model.payload).toBeNull();
    expect(model.state).toBe('loading');
    await advance(0);
    expect(server.calls[1]).toEqual({ notebook: 'b.ipynb', limit: 100 });
    expect(model.experimentName).toBe('/Users/ada/b.ipynb');

    model.setNotebook(null);
    expect(model.state).toBe('no-notebook');
  });

  it('drops an answer to an older query', async () => {
    model.setNotebook('a.ipynb');
    server.hold = true;
    model.start();
    await advance(0);
    model.setNotebook('b.ipynb');
    server.release(); // a's answer arrives after the switch
    await advance(0);
    server.release(); // then b's
    await advance(0);
    expect(server.calls.map(c => c.notebook)).toEqual(['a.ipynb', 'b.ipynb']);
    expect(model.experimentName).toBe('/Users/ada/b.ipynb');
  });

  it('polls every 5 s while a run is RUNNING, else every 30 s', async () => {
    let running = true;
    server.answer = () =>
      runsPayload({
        runs: [
          run('r1', {
            status: running ? 'RUNNING' : 'FINISHED',
            end_time: null
          })
        ]
      });
    await startOnNotebook();
    expect(model.hasRunning).toBe(true);
    expect(model.nextDelay()).toBe(RUNNING_POLL_MS);
    expect(server.calls).toHaveLength(1);
    await expectNextCallAfter(calls, RUNNING_POLL_MS);
    running = false;
    await advance(RUNNING_POLL_MS);
    expect(server.calls).toHaveLength(3);
    expect(model.hasRunning).toBe(false);
    expect(model.nextDelay()).toBe(IDLE_POLL_MS);
    await expectNextCallAfter(calls, IDLE_POLL_MS);
  });

  it('sends nothing while hidden, and asks at once when shown again', async () => {
    await startOnNotebook();
    model.stop();
    await advance(5 * IDLE_POLL_MS);
    model.setNotebook('b.ipynb'); // a switch while hidden does not ask either
    model.setFilter('FAILED');
    await advance(5 * IDLE_POLL_MS);
    expect(server.calls).toHaveLength(1);
    model.start();
    await advance(0);
    expect(server.calls).toHaveLength(2);
    expect(server.calls[1]).toEqual({
      notebook: 'b.ipynb',
      status: 'FAILED',
      limit: 100
    });
  });

  it('says MLflow is starting and asks every 2 s', async () => {
    server.answer = () =>
      mlflowDownPayload({ state: 'starting', elapsed_s: 7 });
    await startOnNotebook();
    expect(model.state).toBe('starting');
    expect(model.nextDelay()).toBe(STARTING_POLL_MS);
    await advance(STARTING_POLL_MS);
    expect(server.calls).toHaveLength(2);
  });

  it('says MLflow is unreachable', async () => {
    server.answer = () =>
      mlflowDownPayload({ state: 'failed', error: 'Connection refused' });
    await startOnNotebook();
    expect(model.state).toBe('unreachable');
    server.answer = () =>
      mlflowDownPayload({
        state: 'external',
        error: 'timed out',
        tracking_uri: 'http://mlflow:5000'
      });
    await model.refresh();
    expect(model.state).toBe('unreachable');
  });

  it('says a stopped MLflow is unreachable, and disabled is disabled', async () => {
    server.answer = () => mlflowDownPayload({ state: 'stopped' });
    await startOnNotebook();
    expect(model.state).toBe('unreachable');
    server.answer = () =>
      mlflowDownPayload({ state: 'disabled', error: 'MLflow is turned off' });
    await model.refresh();
    expect(model.state).toBe('disabled');
  });

  it('names a picked experiment from the list while MLflow cannot answer', async () => {
    server.answer = () =>
      runsPayload({
        mlflow: status({ state: 'starting', elapsed_s: 3 }),
        experiment: null,
        experiment_name: null,
        runs: []
      });
    await startOnNotebook();
    model.selectExperiment('2');
    await advance(0);
    expect(model.state).toBe('starting');
    expect(model.experimentName).toBe('baseline');
  });

  it('says when there are no runs yet, and when the API fails', async () => {
    server.answer = () => runsPayload({ experiment: null, runs: [] });
    await startOnNotebook();
    expect(model.state).toBe('empty');
    expect(model.experimentName).toBe('/Users/ada/llm.ipynb');

    server.answer = () => new APIError(404, 'Not Found');
    model.setNotebook('b.ipynb');
    await advance(0);
    expect(model.state).toBe('error');
    expect(model.error).toBe('Not Found (HTTP 404)');
  });

  it('filters by status here and on the server', async () => {
    server.answer = query =>
      runsPayload({
        runs: [
          run('r1', { status: 'RUNNING', end_time: null }),
          run('r2', { status: 'FINISHED' }),
          run('r3', { status: 'FAILED' })
        ].filter(
          r =>
            !query.status ||
            r.status === query.status ||
            query.status === 'IGNORED'
        )
      });
    await startOnNotebook();
    expect(model.runs.map(r => r.run_id)).toEqual(['r1', 'r2', 'r3']);
    model.setFilter('FAILED');
    // at once, from the runs already here
    expect(model.runs.map(r => r.run_id)).toEqual(['r3']);
    await advance(0);
    expect(server.calls[1].status).toBe('FAILED');
    model.setFilter('KILLED');
    await advance(0);
    expect(model.state).toBe('empty');
    model.setFilter('ALL');
    await advance(0);
    expect(server.calls[3].status).toBeUndefined();
    expect(model.runs).toHaveLength(3);
  });

  it('switches to another experiment and back', async () => {
    await startOnNotebook();
    expect(server.experimentCalls).toBe(1);
    expect(model.experiments.map(e => e.name)).toEqual([
      '/Users/ada/llm.ipynb',
      'baseline'
    ]);

    model.selectExperiment('2');
    expect(model.selectedExperimentId).toBe('2');
    await advance(0);
    expect(server.calls[1]).toEqual({ experiment_id: '2', limit: 100 });
    expect(model.experimentName).toBe('exp-2');

    // the pick stays when the notebook changes; the notebook is remembered for "back"
    model.setNotebook('b.ipynb');
    await advance(0);
    expect(server.calls).toHaveLength(2);
    model.backToNotebook();
    await advance(0);
    expect(server.calls[2]).toEqual({ notebook: 'b.ipynb', limit: 100 });
    expect(model.selectedExperimentId).toBeNull();
  });

  it('focuses a run: its experiment, all statuses, highlighted once', async () => {
    model.setNotebook('a.ipynb');
    model.setFilter('FAILED');
    model.start();
    await advance(0);
    // the notebook's own experiment: no pick needed
    model.focusRun({ experiment_id: '1', run_id: 'r1' });
    expect(model.selectedExperimentId).toBeNull();
    expect(model.filter).toBe('ALL');
    expect(model.highlightedRunId).toBe('r1');
    await advance(0);
    expect(model.takeScrollRequest()).toBe(true);
    expect(model.takeScrollRequest()).toBe(false);

    // another experiment: picked
    model.focusRun({ experiment_id: '9', run_id: 'r1' });
    expect(model.selectedExperimentId).toBe('9');
    await advance(0);
    expect(server.calls[server.calls.length - 1]).toEqual({
      experiment_id: '9',
      limit: 100
    });
  });

  it("decides on the notebook's answer when focusing a run before it came", async () => {
    model.setNotebook('a.ipynb');
    // the notebook's experiment is '1' (FakeRunsServer): nothing to pick
    model.focusRun({ experiment_id: '1', run_id: 'r1' });
    model.start();
    await advance(0);
    expect(model.selectedExperimentId).toBeNull();
    expect(server.calls).toEqual([{ notebook: 'a.ipynb', limit: 100 }]);

    model.setNotebook('b.ipynb');
    model.focusRun({ experiment_id: '5', run_id: 'r9' });
    await advance(0);
    // b's answer says experiment 1: the run is elsewhere, so experiment 5 is picked
    expect(model.selectedExperimentId).toBe('5');
    expect(server.calls.slice(1)).toEqual([
      { notebook: 'b.ipynb', limit: 100 },
      { experiment_id: '5', limit: 100 }
    ]);
    expect(model.experimentName).toBe('exp-5');
  });

  it('stops everything when disposed', async () => {
    await startOnNotebook();
    model.dispose();
    await advance(5 * IDLE_POLL_MS);
    expect(server.calls).toHaveLength(1);
  });
});
