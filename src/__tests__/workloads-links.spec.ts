/**
 * The ways into a job run's page from the MLflow views: the run display's "Workload" button and
 * the Experiment panel's "workload" link on runs of workload attempts.
 */
import { MimeModel } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { ExperimentsPanel } from '../experiments/panel';
import { runJobId } from '../experiments/run-row';
import { RunRenderer } from '../mlflow/run-renderer';
import { RUN_MIME_TYPE, asRunDisplay } from '../mlflow/types';
import { advance, recordingCommands } from './helpers';
import {
  FakeRunsServer,
  T0_MS,
  run,
  runDisplay,
  runsPayload
} from './mlflow-fixtures';

describe('run display: Workload and Logs buttons', () => {
  let calls: [string, any][];
  let renderer: RunRenderer;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_MS });
    calls = [];
    renderer = new RunRenderer({
      commands: recordingCommands(calls)
    });
    Widget.attach(renderer, document.body);
  });

  afterEach(() => {
    renderer.dispose();
    jest.useRealTimers();
  });

  const render = (data: Record<string, unknown>) =>
    renderer.renderModel(
      new MimeModel({ data: { [RUN_MIME_TYPE]: data as any } })
    );
  const workload = () =>
    renderer.node.querySelector<HTMLButtonElement>(
      '.jp-air-run-open-workload'
    )!;
  const logs = () =>
    renderer.node.querySelector<HTMLButtonElement>('.jp-air-run-open-logs')!;

  it('is there for an attempt of a workload and opens its job run', async () => {
    await render({ ...runDisplay(), job_id: '3f2a9c1b0d4e', attempt: 2 });
    expect(workload().hidden).toBe(false);
    expect(workload().title).toBe(
      'Show job run 3f2a9c1b0d4e (attempt 2) in the Workloads panel'
    );
    workload().click();
    expect(calls).toEqual([[CommandIDs.openWorkloads, { id: '3f2a9c1b0d4e' }]]);
    // the logs of this very attempt
    expect(logs().hidden).toBe(false);
    expect(logs().title).toBe('The logs of attempt 2 of job run 3f2a9c1b0d4e');
    logs().click();
    expect(calls[1]).toEqual([
      CommandIDs.openLogs,
      { id: '3f2a9c1b0d4e', attempt: 2 }
    ]);
  });

  it('is not there without a job id (older payloads too)', async () => {
    await render({ ...runDisplay() });
    expect(workload().hidden).toBe(true);
    expect(logs().hidden).toBe(true);
    await render({ ...runDisplay(), job_id: null, attempt: 'x' });
    expect(workload().hidden).toBe(true);
    expect(logs().hidden).toBe(true);
    expect(asRunDisplay({ job_id: 5, attempt: 'x' })).toMatchObject({
      job_id: '5',
      attempt: null
    });
    expect(asRunDisplay({})).toMatchObject({ job_id: null, attempt: null });
  });
});

describe('Experiment panel: workload link', () => {
  it('reads the job run from the run summary, else from its tag', () => {
    expect(runJobId(run('r', { job_id: '77aa' }))).toBe('77aa');
    expect(
      runJobId(run('r', { tags: { 'jupyter_air.workload.job_id': 'abcd' } }))
    ).toBe('abcd');
    expect(
      runJobId(run('r', { tags: { 'jupyter_air.job_id': 'ef01' } }))
    ).toBeNull();
    expect(runJobId(run('r'))).toBeNull();
    expect(runJobId(run('r', { tags: undefined as any }))).toBeNull();
  });

  let panel: ExperimentsPanel;

  it('opens the job run without opening the run', async () => {
    jest.useFakeTimers({ now: T0_MS });
    const calls: [string, any][] = [];
    const server = new FakeRunsServer();
    server.answer = () =>
      runsPayload({
        runs: [
          run('w1', {
            tags: { 'jupyter_air.workload.job_id': '3f2a9c1b0d4e' }
          }),
          run('plain')
        ]
      });
    const model = server.model();
    panel = new ExperimentsPanel({
      model,
      commands: recordingCommands(calls)
    });
    try {
      model.setNotebook('a.ipynb');
      Widget.attach(panel, document.body);
      await advance(0);
      const link = (id: string) =>
        panel.node.querySelector<HTMLButtonElement>(
          `.jp-air-exp-run[data-run-id="${id}"] .jp-air-exp-run-workload`
        )!;
      expect(link('plain').hidden).toBe(true);
      expect(link('w1').hidden).toBe(false);
      link('w1').click();
      expect(calls).toEqual([
        [CommandIDs.openWorkloads, { id: '3f2a9c1b0d4e' }]
      ]);
    } finally {
      panel.dispose();
      model.dispose();
      jest.useRealTimers();
    }
  });
});
