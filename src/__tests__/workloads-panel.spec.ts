import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { JobModel } from '../workloads/job-model';
import { WorkloadsModel } from '../workloads/model';
import { WorkloadsPanel } from '../workloads/panel';
import { IJob } from '../workloads/types';
import {
  HOSTILE,
  advance,
  choose,
  expectNoCallFor,
  expectQuietWhileHidden,
  finders,
  recordingCommands
} from './helpers';
import {
  FakeWorkloadsServer,
  QUEUE_REASON,
  T0_S,
  attempt,
  job,
  loose,
  node,
  queue,
  queuedJob,
  runningJob
} from './workloads-fixtures';

describe('WorkloadsPanel', () => {
  let server: FakeWorkloadsServer;
  let jobs: Map<string, IJob>;
  let requests: string[];
  let model: WorkloadsModel;
  let jobModel: JobModel;
  let panel: WorkloadsPanel;
  let calls: [string, any][];
  let confirmations: IJob[];
  let confirmAnswer: boolean;

  const { q, all, text } = finders(() => panel.node);
  const row = (id: string) => q(`.jp-air-wl-job[data-job-id="${id}"]`);

  async function open(): Promise<void> {
    Widget.attach(panel, document.body);
    await advance(0);
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_S * 1000 });
    calls = [];
    requests = [];
    confirmations = [];
    confirmAnswer = false;
    server = new FakeWorkloadsServer();
    jobs = new Map();
    model = new WorkloadsModel({ fetchWorkloads: server.fetchWorkloads });
    jobModel = new JobModel({
      fetchJob: async id => {
        requests.push(`GET ${id}`);
        const found = jobs.get(id);
        if (!found) {
          throw new Error(`no job run ${id}`);
        }
        return found;
      },
      cancelJob: async id => {
        requests.push(`POST ${id}/cancel`);
        const cancelled: IJob = {
          ...jobs.get(id)!,
          status: 'CANCELLED',
          finished: true,
          reason: 'cancelled by ada',
          ended_at: T0_S
        };
        jobs.set(id, cancelled);
        return cancelled;
      }
    });
    panel = new WorkloadsPanel({
      model,
      jobModel,
      commands: recordingCommands(calls),
      confirmCancel: async j => {
        confirmations.push(j);
        return confirmAnswer;
      }
    });
  });

  afterEach(() => {
    panel.dispose();
    model.dispose();
    jobModel.dispose();
    jest.useRealTimers();
  });

  it('lists job runs, newest first, with their status, compute, attempts and times', async () => {
    server.jobs = [
      runningJob('aaaa00000002', { run_name: 'baseline' }),
      job('aaaa00000001', {
        run_name: loose(null),
        experiment_name: 'sweep',
        status: 'FAILED',
        reason: 'node 0 exited with code 3 (failed 2 attempts)',
        attempts: [
          attempt(1, { status: 'FAILED' }),
          attempt(2, { status: 'FAILED' })
        ]
      })
    ];
    await open();
    expect(all('.jp-air-wl-job').map(li => li.dataset.jobId)).toEqual([
      'aaaa00000002',
      'aaaa00000001'
    ]);
    const running = row('aaaa00000002');
    expect(running.querySelector('.jp-air-wl-job-name')!.textContent).toBe(
      'baseline'
    );
    const badge = running.querySelector('.jp-air-wl-job-status')!;
    expect(badge.textContent).toBe('Running');
    expect(badge.classList).toContain('jp-air-status-running');
    expect(
      running.querySelector('.jp-air-wl-job-experiment')!.textContent
    ).toBe('demo');
    expect(running.querySelector('.jp-air-wl-job-compute')!.textContent).toBe(
      '2 nodes x CPU'
    );
    expect(running.querySelector('.jp-air-wl-job-attempts')!.textContent).toBe(
      '1 attempt'
    );
    expect(running.querySelector('.jp-air-wl-job-when')!.textContent).toMatch(
      /^submitted \d\d:\d\d · started \d\d:\d\d$/
    );
    expect(running.querySelector('.jp-air-wl-job-duration')!.textContent).toBe(
      '1 min 40 s'
    );

    const failed = row('aaaa00000001');
    // no run name: the experiment names it (and is not repeated)
    expect(failed.querySelector('.jp-air-wl-job-name')!.textContent).toBe(
      'sweep'
    );
    expect(
      (failed.querySelector('.jp-air-wl-job-experiment') as HTMLElement).hidden
    ).toBe(true);
    expect(failed.querySelector('.jp-air-wl-job-attempts')!.textContent).toBe(
      '2 attempts'
    );
    expect(failed.querySelector('.jp-air-wl-job-reason')!.textContent).toBe(
      'node 0 exited with code 3 (failed 2 attempts)'
    );
    expect(failed.querySelector('.jp-air-wl-job-duration')!.textContent).toBe(
      '1 min 0 s'
    );

    // the running duration ticks
    await advance(5000);
    expect(running.querySelector('.jp-air-wl-job-duration')!.textContent).toBe(
      '1 min 45 s'
    );
  });

  it('updates statuses in place as the job runs', async () => {
    server.jobs = [runningJob('bbbb00000001')];
    await open();
    const node = row('bbbb00000001');
    expect(node.dataset.status).toBe('RUNNING');
    server.jobs = [job('bbbb00000001')];
    await advance(3000);
    expect(row('bbbb00000001')).toBe(node);
    expect(node.dataset.status).toBe('SUCCEEDED');
    expect(node.querySelector('.jp-air-wl-job-status')!.textContent).toBe(
      'Succeeded'
    );
    expect(node.querySelector('.jp-air-wl-job-status')!.classList).toContain(
      'jp-air-status-finished'
    );
  });

  it('shows a queued job run with its place in line and why it waits', async () => {
    server.jobs = [queuedJob('abab00000001'), runningJob('abab00000000')];
    await open();
    const queued = row('abab00000001');
    expect(queued.dataset.status).toBe('QUEUED');
    const badge = queued.querySelector('.jp-air-wl-job-status')!;
    expect(badge.textContent).toBe('Queued');
    expect(badge.classList).toContain('jp-air-status-queued');
    expect(badge.classList).not.toContain('jp-air-status-running');
    expect(badge.classList).not.toContain('jp-air-status-scheduled');
    const place = queued.querySelector<HTMLElement>('.jp-air-wl-job-queue')!;
    expect(place.hidden).toBe(false);
    expect(place.textContent).toBe('Queued · 2nd of 3');
    expect(place.title).toBe(QUEUE_REASON);
    expect(queued.title).toBe(`${QUEUE_REASON}\nOpen job run abab00000001`);
    // no attempt is starting yet, and nothing runs: no duration
    expect(queued.querySelector('.jp-air-wl-job-attempts')!.textContent).toBe(
      '0 attempts'
    );
    expect(
      queued.querySelector<HTMLElement>('.jp-air-wl-job-duration')!.hidden
    ).toBe(true);
    // only queued job runs have a place
    const running = row('abab00000000');
    expect(
      running.querySelector<HTMLElement>('.jp-air-wl-job-queue')!.hidden
    ).toBe(true);
    expect(running.title).toBe('Open job run abab00000000');

    // polled while queued: it moves up, then starts
    server.jobs[0] = queuedJob('abab00000001', {
      queue: queue({ position: 1, total: 2, reason: 'Next to start' })
    });
    await advance(3000);
    expect(place.textContent).toBe('Queued · 1st of 2');
    expect(place.title).toBe('Next to start');
    server.jobs[0] = runningJob('abab00000001');
    await advance(3000);
    expect(row('abab00000001')).toBe(queued);
    expect(badge.textContent).toBe('Running');
    expect(place.hidden).toBe(true);
    expect(place.title).toBe('');
    expect(queued.title).toBe('Open job run abab00000001');

    // the status filter offers it, and the active filter counts it
    const status = q<HTMLSelectElement>('.jp-air-wl-status-filter');
    const options = Array.from(status.options);
    expect(options.map(o => o.value)).toContain('QUEUED');
    expect(options.find(o => o.value === 'QUEUED')!.text).toBe('Queued');
    expect(options.find(o => o.value === 'ACTIVE')!.text).toBe(
      'Active (pending, queued, running)'
    );
  });

  it('shows why a job run waits as text', async () => {
    const reason = `Waiting for 2 GPU free, behind ${HOSTILE}`;
    server.jobs = [queuedJob('acac00000001', { queue: queue({ reason }) })];
    await open();
    const queued = row('acac00000001');
    const place = queued.querySelector<HTMLElement>('.jp-air-wl-job-queue')!;
    expect(place.title).toBe(reason);
    expect(queued.title).toBe(`${reason}\nOpen job run acac00000001`);
    expect(panel.node.querySelector('img')).toBeNull();
  });

  it('shows names as text', async () => {
    server.jobs = [
      job('cccc00000001', { run_name: HOSTILE, experiment_name: HOSTILE })
    ];
    await open();
    expect(text('.jp-air-wl-job-name')).toBe(HOSTILE);
    expect(panel.node.querySelector('img')).toBeNull();
  });

  it('filters by status and experiment, and pages', async () => {
    server.jobs = Array.from({ length: 120 }, (_, i) =>
      job(`dddd${String(119 - i).padStart(8, '0')}`, {
        experiment_name: i < 60 ? 'a' : 'b',
        status: i % 3 === 0 ? 'FAILED' : 'SUCCEEDED'
      })
    );
    await open();
    expect(all('.jp-air-wl-job')).toHaveLength(50);
    expect(text('.jp-air-wl-range')).toBe('1–50 of 120');
    expect(q<HTMLButtonElement>('.jp-air-wl-previous').disabled).toBe(true);
    q<HTMLButtonElement>('.jp-air-wl-next').click();
    await advance(0);
    expect(text('.jp-air-wl-range')).toBe('51–100 of 120');
    q<HTMLButtonElement>('.jp-air-wl-next').click();
    await advance(0);
    expect(text('.jp-air-wl-range')).toBe('101–120 of 120');
    expect(q<HTMLButtonElement>('.jp-air-wl-next').disabled).toBe(true);

    const status = q<HTMLSelectElement>('.jp-air-wl-status-filter');
    await choose(status, 'FAILED');
    expect(server.calls[server.calls.length - 1]).toMatchObject({
      status: ['FAILED'],
      offset: 0
    });
    expect(text('.jp-air-wl-range')).toBe('1–40 of 40');

    const experiments = q<HTMLSelectElement>('.jp-air-wl-experiment-filter');
    expect(Array.from(experiments.options).map(o => o.value)).toEqual([
      '',
      'a',
      'b'
    ]);
    await choose(experiments, 'b');
    expect(server.calls[server.calls.length - 1]).toMatchObject({
      status: ['FAILED'],
      experiment: 'b'
    });
    expect(all('.jp-air-wl-job')).toHaveLength(20);
    expect(q('.jp-air-wl-previous').hidden).toBe(true);

    await choose(status, 'RUNNING');
    expect(text('.jp-air-wl-list .jp-air-wl-message')).toBe(
      'No job runs match these filters.'
    );
  });

  it('sends nothing while hidden', async () => {
    server.jobs = [runningJob('eeee00000001')];
    await open();
    expect(server.calls).toHaveLength(1);
    await expectQuietWhileHidden(panel, () => server.calls.length, 120_000);
  });

  describe('job page', () => {
    const ID = 'ffff00000001';

    async function openJob(j: IJob): Promise<void> {
      jobs.set(j.id, j);
      server.jobs = [j];
      await open();
      row(j.id).click();
      await advance(0);
    }

    /** The panel again, asking before a cancel as it does by default (JupyterLab's dialog). */
    function withDefaultDialog(): void {
      panel.dispose();
      panel = new WorkloadsPanel({
        model,
        jobModel,
        commands: { execute: async () => undefined }
      });
    }

    it('shows the attempts with their MLflow links, exit reasons and the YAML as text', async () => {
      const yaml = `experiment_name: demo\ncommand: echo "${HOSTILE}"\n`;
      await openJob(
        job(ID, {
          status: 'FAILED',
          reason: 'node 1 exited with code 3 (failed 2 attempts)',
          spec_yaml: yaml,
          attempts: [
            attempt(1, {
              status: 'FAILED',
              reason: 'node 1 exited with code 3',
              nodes: [
                { ...node(0, 1, null), signal: loose('SIGTERM') },
                node(1, 2, 3)
              ]
            }),
            attempt(2, { status: 'FAILED', reason: null, exit_code: 3 })
          ]
        })
      );
      expect(panel.view).toBe('job');
      expect(requests).toEqual([`GET ${ID}`]);
      expect(q('.jp-air-wl-list').hidden).toBe(true);
      // one Refresh: the page's
      expect(q('.jp-air-wl-refresh').hidden).toBe(true);
      expect(q('.jp-air-wl-page-refresh').hidden).toBe(false);
      expect(text('.jp-air-wl-page-name')).toBe(`run-${ID}`);
      expect(text('.jp-air-wl-page-status')).toBe('Failed');
      expect(text('.jp-air-wl-page-reason')).toBe(
        'node 1 exited with code 3 (failed 2 attempts)'
      );
      const attempts = all('.jp-air-wl-attempt');
      expect(attempts.map(a => a.dataset.attempt)).toEqual(['2', '1']); // latest first
      const first = attempts[1];
      expect(
        first.querySelector('.jp-air-wl-attempt-reason')!.textContent
      ).toBe('node 1 exited with code 3');
      expect(first.querySelector('.jp-air-wl-attempt-nodes')!.textContent).toBe(
        'node 0: SIGTERM · node 1: exit 3'
      );
      expect(
        attempts[0].querySelector('.jp-air-wl-attempt-reason')!.textContent
      ).toBe('exited with code 3');
      const runLink = first.querySelector<HTMLAnchorElement>(
        '.jp-air-wl-attempt-run'
      )!;
      expect(runLink.getAttribute('href')).toBe(
        '/user/alice/air/mlflow/#/experiments/7/runs/run1abc?workflowType=machine_learning'
      );
      expect(runLink.target).toBe('_blank');
      runLink.click();
      const metrics = first.querySelector<HTMLAnchorElement>(
        '.jp-air-wl-attempt-metrics'
      )!;
      expect(metrics.getAttribute('href')).toBe(
        '/user/alice/air/mlflow/#/experiments/7/runs/run1abc/system-metrics'
      );
      metrics.click();
      expect(calls).toEqual([
        [
          CommandIDs.openMlflow,
          { path: '#/experiments/7/runs/run1abc?workflowType=machine_learning' }
        ],
        [
          CommandIDs.openMlflow,
          { path: '#/experiments/7/runs/run1abc/system-metrics' }
        ]
      ]);

      const pre = q('.jp-air-wl-yaml');
      expect(pre.tagName).toBe('PRE');
      expect(pre.textContent).toBe(yaml);
      expect(panel.node.querySelector('img')).toBeNull();

      // buttons
      calls.length = 0;
      q<HTMLButtonElement>('.jp-air-wl-logs').click();
      q<HTMLButtonElement>('.jp-air-wl-open-experiment').click();
      first
        .querySelector<HTMLButtonElement>('.jp-air-wl-attempt-logs')!
        .click();
      expect(calls).toEqual([
        [CommandIDs.openLogs, { id: ID }],
        [CommandIDs.openExperiments, { experiment_id: '7' }],
        [CommandIDs.openLogs, { id: ID, attempt: 1 }]
      ]);
      // over: Cancel is disabled and the page is not polled
      expect(q<HTMLButtonElement>('.jp-air-wl-cancel').disabled).toBe(true);
      await advance(60_000);
      expect(requests).toEqual([`GET ${ID}`]);
    });

    it('says when the supervisor of an active job run was not seen for a while', async () => {
      await openJob(runningJob(ID));
      const facts = () => q('.jp-air-wl-facts').textContent ?? '';
      expect(facts()).not.toContain('Supervisor');
      jobs.set(ID, runningJob(ID, { supervisor_silent_s: 41.6 }));
      await advance(3000);
      expect(facts()).toContain('Supervisornot seen for 42 s');
    });

    it('says where the last attempt ran, the warnings, and a remote call', async () => {
      const ray = attempt(1, {
        backend: 'ray',
        nodes: [
          { ...node(0, 11, 0), host: '10.0.0.7' },
          { ...node(1, 12, 0), host: '10.0.0.8' }
        ]
      });
      await openJob(
        job(ID, {
          backend: 'ray',
          cluster: '10.0.0.5:6379',
          attempts: [ray],
          source: 'distributed',
          spec_path: null,
          notebook: 'train.ipynb',
          warnings: [
            { t: T0_S - 90, message: 'MLflow did not answer: <b>later</b>' }
          ]
        })
      );
      const facts = q('.jp-air-wl-facts').textContent ?? '';
      expect(facts).toContain('Runs onray (10.0.0.5:6379): 10.0.0.7, 10.0.0.8');
      expect(facts).toContain('MLflow did not answer: <b>later</b>');
      expect(q('.jp-air-wl-facts').querySelector('b')).toBeNull(); // text, not HTML
      expect(q('.jp-air-wl-no-yaml').textContent).toContain(
        '.distributed(remote=True) from train.ipynb'
      );
    });

    it('shows where a queued job run stands in line, polls it and cancels it', async () => {
      await openJob(queuedJob(ID));
      expect(text('.jp-air-wl-page-status')).toBe('Queued');
      expect(q('.jp-air-wl-page-status').classList).toContain(
        'jp-air-status-queued'
      );
      const facts = q('.jp-air-wl-facts');
      const terms = Array.from(facts.querySelectorAll('dt')).map(
        dt => dt.textContent
      );
      expect(terms[0]).toBe('Queue');
      const fact = facts.querySelector('dd')!;
      expect(fact.textContent).toBe(`2nd in line of 3 — ${QUEUE_REASON}`);
      expect(fact.title).toBe(fact.textContent);
      expect(all('.jp-air-wl-section').map(el => el.textContent)).toContain(
        'Attempts: none yet'
      );
      // active: polled, and it can be cancelled (it leaves the queue)
      await advance(3000);
      expect(requests).toEqual([`GET ${ID}`, `GET ${ID}`]);
      jobs.set(ID, queuedJob(ID, { queue: queue({ position: 1, total: 1 }) }));
      await advance(3000);
      expect(q('.jp-air-wl-facts dd')!.textContent).toBe(
        `1st in line of 1 — ${QUEUE_REASON}`
      );
      const cancel = q<HTMLButtonElement>('.jp-air-wl-cancel');
      expect(cancel.disabled).toBe(false);
      expect(cancel.title).toBe(
        'Take this job run out of its queue (after a confirmation)'
      );
      confirmAnswer = true;
      cancel.click();
      await advance(0);
      expect(confirmations.map(j => j.status)).toEqual(['QUEUED']);
      expect(requests.filter(r => r.startsWith('POST'))).toEqual([
        `POST ${ID}/cancel`
      ]);
      expect(text('.jp-air-wl-page-status')).toBe('Cancelled');
      expect(q('.jp-air-wl-facts').textContent).not.toContain('Queue');
      expect(cancel.disabled).toBe(true);
    });

    it('shows why a job run waits as text on its page', async () => {
      const reason = `Waiting for 3 nodes with 2 GPU free; ${HOSTILE}`;
      await openJob(queuedJob(ID, { queue: queue({ reason }) }));
      expect(q('.jp-air-wl-facts dd')!.textContent).toBe(
        `2nd in line of 3 — ${reason}`
      );
      expect(panel.node.querySelector('img')).toBeNull();
    });

    it('hides links an attempt does not have', async () => {
      await openJob(job(ID, { attempts: [attempt(1, { links: loose({}) })] }));
      expect(q('.jp-air-wl-attempt-run').hidden).toBe(true);
      expect(q('.jp-air-wl-attempt-metrics').hidden).toBe(true);
    });

    it('cancels a running job run after a confirmation', async () => {
      await openJob(runningJob(ID, { spec_yaml: 'command: sleep 60\n' }));
      const cancel = q<HTMLButtonElement>('.jp-air-wl-cancel');
      expect(cancel.disabled).toBe(false);
      // declined: nothing sent
      confirmAnswer = false;
      cancel.click();
      await advance(0);
      expect(confirmations.map(j => j.id)).toEqual([ID]);
      expect(requests.filter(r => r.startsWith('POST'))).toEqual([]);
      // confirmed: POST, then the page shows the cancelled job run
      confirmAnswer = true;
      cancel.click();
      await advance(0);
      expect(requests.filter(r => r.startsWith('POST'))).toEqual([
        `POST ${ID}/cancel`
      ]);
      expect(text('.jp-air-wl-page-status')).toBe('Cancelled');
      expect(cancel.disabled).toBe(true);
      expect(text('.jp-air-wl-yaml')).toBe('command: sleep 60\n');
    });

    it("asks with JupyterLab's dialog by default", async () => {
      withDefaultDialog();
      await openJob(runningJob(ID));
      const cancel = q<HTMLButtonElement>('.jp-air-wl-cancel');
      const answer = async (label: string) => {
        cancel.click();
        await advance(0);
        const dialog = document.body.querySelector('.jp-Dialog')!;
        expect(dialog.textContent).toContain(`job run ${ID}`);
        const buttons = Array.from(
          dialog.querySelectorAll<HTMLButtonElement>('.jp-Dialog-button')
        );
        buttons.find(b => b.textContent === label)!.click();
        await advance(0);
      };
      await answer('Keep running');
      expect(requests.filter(r => r.startsWith('POST'))).toEqual([]);
      await answer('Cancel job run');
      expect(requests.filter(r => r.startsWith('POST'))).toEqual([
        `POST ${ID}/cancel`
      ]);
      expect(text('.jp-air-wl-page-status')).toBe('Cancelled');
    });

    it('asks differently to take a queued job run out of its queue', async () => {
      withDefaultDialog();
      await openJob(queuedJob(ID));
      q<HTMLButtonElement>('.jp-air-wl-cancel').click();
      await advance(0);
      const dialog = document.body.querySelector('.jp-Dialog')!;
      expect(dialog.textContent).toContain("will leave its cluster's queue");
      const buttons = Array.from(
        dialog.querySelectorAll<HTMLButtonElement>('.jp-Dialog-button')
      );
      expect(buttons.map(b => b.textContent)).toEqual([
        'Keep waiting',
        'Cancel job run'
      ]);
      buttons[1].click();
      await advance(0);
      expect(requests.filter(r => r.startsWith('POST'))).toEqual([
        `POST ${ID}/cancel`
      ]);
    });

    it('polls an active job run and goes back to the list', async () => {
      await openJob(runningJob(ID));
      await advance(3000);
      expect(requests).toEqual([`GET ${ID}`, `GET ${ID}`]);
      const listCalls = server.calls.length;
      q<HTMLButtonElement>('.jp-air-wl-back').click();
      await advance(0);
      expect(panel.view).toBe('list');
      expect(q('.jp-air-wl-page').hidden).toBe(true);
      expect(q('.jp-air-wl-refresh').hidden).toBe(false);
      expect(server.calls.length).toBe(listCalls + 1);
      // the page is polled no more
      await expectNoCallFor(() => requests.length, 10_000);
    });

    it('says when the job run does not exist', async () => {
      await open();
      panel.openJob('0000deadbeef');
      await advance(0);
      expect(text('.jp-air-wl-page-message')).toContain('0000deadbeef');
      expect(q('.jp-air-wl-page-content').hidden).toBe(true);
    });
  });
});
