import { statusClass, statusLabel } from '../common/status';
import {
  formatMetric,
  formatRunDuration,
  formatStartTime,
  runDurationMs
} from '../mlflow/format';
import { fetchExperiments, fetchMlflowStatus, fetchRuns } from '../mlflow/api';
import { isForeignUrl, safeFragment, safeUiUrl, uiLink } from '../mlflow/links';
import { asRunDisplay } from '../mlflow/types';
import { stubFetch, trans } from './helpers';

describe('run formatting', () => {
  it('formats durations compactly', () => {
    expect(formatRunDuration(trans, 0)).toBe('0 s');
    expect(formatRunDuration(trans, 45_900)).toBe('45 s');
    expect(formatRunDuration(trans, 192_000)).toBe('3 min 12 s');
    expect(formatRunDuration(trans, 7_500_000)).toBe('2 h 05 min');
    expect(formatRunDuration(trans, 3 * 86_400_000 + 4 * 3_600_000)).toBe(
      '3 d 4 h'
    );
    expect(formatRunDuration(trans, null)).toBe('—');
  });

  it('computes durations: ended, running, unknown', () => {
    expect(runDurationMs('FINISHED', 1000, 61_000, 999_999)).toBe(60_000);
    expect(runDurationMs('RUNNING', 1000, null, 11_000)).toBe(10_000);
    expect(runDurationMs('FAILED', 1000, null, 11_000)).toBeNull();
    expect(runDurationMs('RUNNING', null, null, 11_000)).toBeNull();
  });

  it('formats start times relative to today', () => {
    const now = new Date(2025, 10, 29, 15, 0).getTime();
    expect(formatStartTime(new Date(2025, 10, 29, 9, 5).getTime(), now)).toBe(
      '09:05'
    );
    expect(formatStartTime(new Date(2025, 0, 2, 9, 5).getTime(), now)).toBe(
      '01-02 09:05'
    );
    expect(formatStartTime(new Date(2024, 0, 2, 9, 5).getTime(), now)).toBe(
      '2024-01-02 09:05'
    );
  });

  it('formats metric values', () => {
    expect(formatMetric(42)).toBe('42');
    expect(formatMetric(0.123456)).toBe('0.1235');
    expect(formatMetric(0.5)).toBe('0.5');
    expect(formatMetric(1.23e-5)).toBe('1.23e-5');
    expect(formatMetric(1.0e-5)).toBe('1e-5');
    expect(formatMetric(3_456_789.5)).toBe('3.46e+6');
    expect(formatMetric(NaN)).toBe('—');
    expect(formatMetric('x')).toBe('—');
  });

  it('labels statuses', () => {
    expect(statusLabel(trans, 'RUNNING')).toBe('Running');
    expect(statusClass('KILLED')).toBe('jp-air-status-killed');
    expect(statusClass('<b>')).toBe('jp-air-status-other');
  });
});

describe('MLflow UI links', () => {
  it('accepts http(s) URLs and paths only', () => {
    expect(safeUiUrl('/user/alice/air/mlflow/')).toBe(
      '/user/alice/air/mlflow/'
    );
    expect(safeUiUrl('https://mlflow.example.com/')).toBe(
      'https://mlflow.example.com/'
    );
    expect(safeUiUrl('javascript:alert(1)')).toBeNull();
    expect(safeUiUrl('data:text/html,x')).toBeNull();
    expect(safeUiUrl('air/mlflow/')).toBeNull();
    expect(safeUiUrl(null)).toBeNull();
  });

  it('accepts fragments only', () => {
    expect(safeFragment('#/experiments/1/runs/abc')).toBe(
      '#/experiments/1/runs/abc'
    );
    expect(safeFragment('/experiments/1')).toBeNull();
    expect(safeFragment('#a b')).toBeNull();
    expect(safeFragment(3)).toBeNull();
  });

  it('joins the UI and a fragment', () => {
    expect(uiLink('/air/mlflow/', '#/experiments/1')).toBe(
      '/air/mlflow/#/experiments/1'
    );
    expect(uiLink('/air/mlflow/#/old', '#/new')).toBe('/air/mlflow/#/new');
    expect(uiLink('/air/mlflow/', 'javascript:x')).toBe('/air/mlflow/');
    expect(uiLink('javascript:x', '#/a')).toBeNull();
  });

  it('tells foreign origins', () => {
    expect(isForeignUrl('/air/mlflow/', 'http://localhost:8888')).toBe(false);
    expect(
      isForeignUrl('http://localhost:8888/x', 'http://localhost:8888')
    ).toBe(false);
    expect(
      isForeignUrl('http://localhost:5000/', 'http://localhost:8888')
    ).toBe(true);
    expect(isForeignUrl('//mlflow.example.com/', 'http://localhost:8888')).toBe(
      true
    );
  });
});

describe('asRunDisplay', () => {
  it('types every field of unknown data', () => {
    expect(asRunDisplay(null)).toEqual({
      run_id: '',
      run_name: '',
      status: '',
      experiment_id: '',
      experiment_name: '',
      parent_run_id: null,
      resumed: false,
      start_time: null,
      end_time: null,
      links: { run: null, system_metrics: null, experiment: null },
      ui: null,
      no_ui_reason: null,
      job_id: null,
      attempt: null
    });
    expect(
      asRunDisplay({ experiment_id: 7, status: 'running', resumed: 'yes' })
    ).toMatchObject({
      experiment_id: '7',
      status: 'RUNNING',
      resumed: false
    });
  });
});

describe('MLflow API calls', () => {
  const requests = stubFetch('{}');

  it('GETs air/api/mlflow, runs and experiments under the base URL', async () => {
    await fetchMlflowStatus();
    await fetchRuns({
      notebook: 'dir/a b.ipynb',
      status: 'RUNNING',
      limit: 100
    });
    await fetchRuns({ experiment_id: '7' });
    await fetchExperiments();
    const urls = requests.map(r => new URL(r.url));
    expect(requests.every(r => r.method === 'GET')).toBe(true);
    expect(urls[0].pathname).toMatch(/\/air\/api\/mlflow$/);
    expect(urls[1].pathname).toMatch(/\/air\/api\/runs$/);
    expect(urls[1].searchParams.get('notebook')).toBe('dir/a b.ipynb');
    expect(urls[1].searchParams.get('status')).toBe('RUNNING');
    expect(urls[1].searchParams.get('limit')).toBe('100');
    expect(urls[2].searchParams.get('experiment_id')).toBe('7');
    expect(urls[2].searchParams.has('notebook')).toBe(false);
    expect(urls[3].pathname).toMatch(/\/air\/api\/experiments$/);
  });
});
