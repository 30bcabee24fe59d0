import { Widget } from '@lumino/widgets';

import { ISchedule } from '../api/models';
import { JobModel } from '../workloads/job-model';
import { WorkloadsModel } from '../workloads/model';
import { WorkloadsPanel } from '../workloads/panel';
import { SchedulesModel } from '../workloads/schedules-model';
import { IJob } from '../workloads/types';
import { HOSTILE, advance, shown } from './helpers';
import { FakeWorkloadsServer, T0_S, job } from './workloads-fixtures';

function schedule(id: string, overrides: Partial<ISchedule> = {}): ISchedule {
  return {
    id,
    name: 'nightly',
    cron: '0 3 * * *',
    timezone: 'Europe/Paris',
    overlap: 'skip',
    catch_up: 'latest',
    paused: false,
    experiment_name: 'demo',
    spec_path: '/home/ada/nightly.yaml',
    user: 'ada',
    created_at: T0_S - 86400,
    updated_at: T0_S - 86400,
    next_firing_at: T0_S + 3600,
    last_slot: T0_S - 82800,
    queued_slot: null,
    last_runs: [],
    firings: [],
    ...overrides
  };
}

describe('the Schedules section of the Workloads panel', () => {
  let schedules: ISchedule[];
  let requests: string[];
  let model: WorkloadsModel;
  let jobModel: JobModel;
  let schedulesModel: SchedulesModel;
  let panel: WorkloadsPanel;
  let jobs: Map<string, IJob>;

  const q = (selector: string) =>
    panel.node.querySelector(selector) as HTMLElement | null;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_S * 1000 });
    requests = [];
    jobs = new Map();
    schedules = [];
    model = new WorkloadsModel({
      fetchWorkloads: new FakeWorkloadsServer().fetchWorkloads
    });
    jobModel = new JobModel({
      fetchJob: async id => {
        requests.push(`GET job ${id}`);
        return jobs.get(id)!;
      },
      cancelJob: async id => jobs.get(id)!
    });
    schedulesModel = new SchedulesModel({
      fetchSchedules: async () => {
        requests.push('GET schedules');
        return { schedules };
      },
      setPaused: async (id, paused) => {
        requests.push(`POST ${id}/${paused ? 'pause' : 'resume'}`);
        schedules = schedules.map(s =>
          s.id === id
            ? { ...s, paused, next_firing_at: paused ? null : T0_S + 3600 }
            : s
        );
        return schedules.find(s => s.id === id)!;
      }
    });
    panel = new WorkloadsPanel({
      model,
      jobModel,
      schedulesModel,
      commands: { execute: async () => undefined }
    });
  });

  afterEach(() => {
    panel.dispose();
    model.dispose();
    jobModel.dispose();
    schedulesModel.dispose();
    jest.useRealTimers();
  });

  async function open(): Promise<void> {
    Widget.attach(panel, document.body);
    await advance(0);
  }

  it('is hidden while there is no schedule', async () => {
    await open();
    expect(requests).toContain('GET schedules');
    expect(shown(q('.jp-air-wl-schedules'))).toBe(false);
  });

  it('shows each schedule: cron and timezone, next firing, state and last runs', async () => {
    jobs.set('bbbb00000001', job('bbbb00000001'));
    schedules = [
      schedule('aaaa00000001', {
        name: HOSTILE,
        last_runs: [
          {
            id: 'bbbb00000001',
            status: 'SUCCEEDED',
            submitted_at: T0_S - 600,
            link: '/user/ada/lab?air-workload=bbbb00000001'
          },
          {
            id: 'bbbb00000000',
            status: 'FAILED',
            submitted_at: T0_S - 87000,
            link: 'javascript:alert(1)'
          }
        ]
      }),
      schedule('aaaa00000002', {
        name: 'hourly',
        cron: '0 * * * *',
        timezone: 'UTC',
        paused: true,
        next_firing_at: null
      })
    ];
    await open();
    expect(shown(q('.jp-air-wl-schedules'))).toBe(true);
    expect(q('.jp-air-wl-schedules-title')!.textContent).toBe('Schedules');
    const row = panel.scheduleRowOf('aaaa00000001')!;
    expect(row.querySelector('.jp-air-wl-schedule-name')!.textContent).toBe(
      HOSTILE
    );
    expect(row.querySelector('img')).toBeNull(); // names are text
    expect(row.querySelector('.jp-air-wl-schedule-when')!.textContent).toBe(
      '0 3 * * * (Europe/Paris)'
    );
    const next = row.querySelector<HTMLElement>(
      '.jp-air-wl-schedule-next-time'
    )!;
    expect(next.getAttribute('datetime')).toBe(
      new Date((T0_S + 3600) * 1000).toISOString()
    );
    expect(next.textContent).not.toBe('—');
    expect(row.querySelector('.jp-air-wl-schedule-state')!.textContent).toBe(
      'Active'
    );
    const runs = Array.from(
      row.querySelectorAll<HTMLAnchorElement>('.jp-air-wl-schedule-run')
    );
    expect(runs.map(r => r.textContent)).toEqual(['Succeeded', 'Failed']);
    expect(runs[0].classList).toContain('jp-air-status-finished');
    expect(runs[1].classList).toContain('jp-air-status-failed');
    expect(runs[0].getAttribute('href')).toBe(
      '/user/ada/lab?air-workload=bbbb00000001'
    );
    expect(runs[1].hasAttribute('href')).toBe(false); // not a page of this server

    const paused = panel.scheduleRowOf('aaaa00000002')!;
    expect(paused.dataset.paused).toBe('true');
    expect(paused.querySelector('.jp-air-wl-schedule-state')!.textContent).toBe(
      'Paused'
    );
    expect(
      paused.querySelector('.jp-air-wl-schedule-next-time')!.textContent
    ).toBe('—');
    expect(paused.querySelector('.jp-air-wl-schedule-runs')!.textContent).toBe(
      'No runs yet'
    );
    expect(
      paused.querySelector('.jp-air-wl-schedule-toggle')!.textContent
    ).toBe('Resume');

    runs[0].click(); // its job page
    await advance(0);
    expect(panel.view).toBe('job');
    expect(requests).toContain('GET job bbbb00000001');
    expect(shown(q('.jp-air-wl-schedules'))).toBe(false);
  });

  it('pauses and resumes a schedule, showing what the server answers', async () => {
    schedules = [schedule('aaaa00000001')];
    await open();
    const toggle = () =>
      panel
        .scheduleRowOf('aaaa00000001')!
        .querySelector<HTMLButtonElement>('.jp-air-wl-schedule-toggle')!;
    expect(toggle().textContent).toBe('Pause');
    toggle().click();
    await advance(0);
    expect(requests).toContain('POST aaaa00000001/pause');
    const row = panel.scheduleRowOf('aaaa00000001')!;
    expect(row.dataset.paused).toBe('true');
    expect(toggle().textContent).toBe('Resume');
    toggle().click();
    await advance(0);
    expect(requests).toContain('POST aaaa00000001/resume');
    expect(panel.scheduleRowOf('aaaa00000001')!.dataset.paused).toBe('false');
  });
});
