/**
 * Fixed MLflow API data and run displays shared by the MLflow specs.
 */
import { ExperimentsModel } from '../experiments/model';
import { IRunsQuery } from '../mlflow/api';
import {
  IExperiment,
  IExperimentsPayload,
  IMlflowStatus,
  IRun,
  IRunDisplay,
  IRunsPayload
} from '../mlflow/types';

/** A base time (ms since the epoch) for the fixtures. */
export const T0_MS = 1764410000000;

export function status(overrides: Partial<IMlflowStatus> = {}): IMlflowStatus {
  return {
    mode: 'embedded',
    state: 'ready',
    tracking_uri: 'http://127.0.0.1:5123',
    ui: '/user/alice/air/mlflow/',
    elapsed_s: null,
    error: null,
    restarts: 0,
    ready_after_s: null,
    next_start_at: null,
    reachable: null,
    ...overrides
  };
}

export function links(experimentId: string, runId: string) {
  return {
    run: `#/experiments/${experimentId}/runs/${runId}`,
    system_metrics: `#/experiments/${experimentId}/runs/${runId}/system-metrics`,
    experiment: `#/experiments/${experimentId}/runs`
  };
}

export function run(runId: string, overrides: Partial<IRun> = {}): IRun {
  return {
    run_id: runId,
    run_name: `name-${runId}`,
    status: 'FINISHED',
    start_time: T0_MS - 120_000,
    end_time: T0_MS - 60_000,
    experiment_id: '1',
    parent_run_id: null,
    job_id: null,
    metrics: { loss: 0.123456, accuracy: 0.9 },
    tags: {},
    links: links('1', runId),
    ...overrides
  };
}

export function runsPayload(
  overrides: Partial<IRunsPayload> = {}
): IRunsPayload {
  return {
    mlflow: status(),
    experiment: { experiment_id: '1', name: '/Users/ada/llm.ipynb' },
    experiment_name: '/Users/ada/llm.ipynb',
    runs: [run('r1')],
    truncated: false,
    ...overrides
  };
}

/** The answer while MLflow is not serving (`mlflow`: how its status differs): no runs. */
export function mlflowDownPayload(
  mlflow: Partial<IMlflowStatus>
): IRunsPayload {
  return runsPayload({ mlflow: status(mlflow), runs: [] });
}

export function experiment(id: string, name: string): IExperiment {
  return { experiment_id: id, name, last_update_time: T0_MS };
}

export function runDisplay(overrides: Partial<IRunDisplay> = {}): IRunDisplay {
  return {
    run_id: 'abc123def4567890abc123def4567890',
    run_name: 'bright-fox-42',
    status: 'RUNNING',
    experiment_id: '7',
    experiment_name: '/Users/ada/llm.ipynb',
    parent_run_id: null,
    resumed: false,
    start_time: T0_MS - 65_000,
    end_time: null,
    links: links('7', 'abc123def4567890abc123def4567890'),
    ui: '/user/alice/air/mlflow/',
    no_ui_reason: null,
    ...overrides
  };
}

/**
 * A fake runs/experiments server: answers from `answer(query)` (default: a payload per notebook or
 * experiment), records the queries, and can hold answers until `release()`.
 */
export class FakeRunsServer {
  calls: IRunsQuery[] = [];
  experimentCalls = 0;
  experiments: IExperiment[] = [
    experiment('1', '/Users/ada/llm.ipynb'),
    experiment('2', 'baseline')
  ];
  hold = false;
  answer: (query: IRunsQuery) => IRunsPayload | Error = query =>
    runsPayload({
      experiment: query.experiment_id
        ? {
            experiment_id: query.experiment_id,
            name: `exp-${query.experiment_id}`
          }
        : { experiment_id: '1', name: `/Users/ada/${query.notebook}` },
      experiment_name: query.experiment_id
        ? `exp-${query.experiment_id}`
        : `/Users/ada/${query.notebook}`
    });

  private _held: (() => void)[] = [];

  /** An Experiments model that asks this server (`options`: the rest of its options). */
  model(options: ExperimentsModel.IOptions = {}): ExperimentsModel {
    return new ExperimentsModel({
      fetchRuns: this.fetchRuns,
      fetchExperiments: this.fetchExperiments,
      ...options
    });
  }

  fetchRuns = (query: IRunsQuery): Promise<IRunsPayload> => {
    this.calls.push({ ...query });
    const respond = () => {
      const answer = this.answer(query);
      return answer instanceof Error
        ? Promise.reject(answer)
        : Promise.resolve(answer);
    };
    if (!this.hold) {
      return respond();
    }
    return new Promise((resolve, reject) => {
      this._held.push(() => respond().then(resolve, reject));
    });
  };

  fetchExperiments = async (): Promise<IExperimentsPayload> => {
    this.experimentCalls++;
    return { mlflow: status(), experiments: this.experiments };
  };

  /** Answer the held calls, oldest first. */
  release(): void {
    const held = this._held;
    this._held = [];
    held.forEach(answer => answer());
  }
}
