/**
 * Helpers of the workloads browser tests and the logs benchmark: submit a real job run to the
 * test server's job store with `air run` (as a user would from a terminal), and wait for it.
 * Not a spec: Playwright's test match skips it.
 *
 * The job runs on this machine; its command is Python code written next to the YAML. The test
 * server keeps its jupyter-air data in `<JUPYTER_DATA_DIR>/air-<port>`
 * (jupyter_server_test_config.py); `air` is pointed at it and at the server's MLflow.
 */
import type { APIRequestContext } from '@playwright/test';
import { expect } from '@playwright/test';
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';

const run = promisify(execFile);

/** The Python with jupyter-air (the project's .venv when scripts/env.sh set PATH). */
const PYTHON = process.env.AIR_PYTHON || 'python';

/** The jupyter-air data folder of the test server at `baseURL`. */
export function serverDataDir(baseURL: string): string {
  const port = new URL(baseURL).port;
  const base =
    process.env.JUPYTER_DATA_DIR ||
    path.join(os.homedir(), '.local', 'share', 'jupyter');
  return path.join(base, `air-${port}`);
}

/** Wait until the server's MLflow accepts runs; its tracking URI. */
export async function mlflowReady(
  request: APIRequestContext,
  baseURL: string
): Promise<string> {
  let uri = '';
  await expect
    .poll(
      async () => {
        const status = await (
          await request.get(`${baseURL}/air/api/mlflow`)
        ).json();
        uri = status.tracking_uri ?? '';
        return status.state;
      },
      { timeout: 150_000, intervals: [1000] }
    )
    .toMatch(/^(ready|external)$/);
  return uri;
}

let interpreter: string | null = null;

/** The absolute path of the Python interpreter (for the job's command). */
async function python(): Promise<string> {
  if (interpreter === null) {
    const { stdout } = await run(PYTHON, [
      '-c',
      'import sys; print(sys.executable)'
    ]);
    interpreter = stdout.trim();
  }
  return interpreter;
}

/** What `air run --output json` prints: the job run. */
export interface ISubmitted {
  id: string;
  status: string;
  [key: string]: unknown;
}

/**
 * A new empty folder for a test's files, in the run's scratch folder (playwright.config.js:
 * outside any git repository, removed at the end of the run).
 */
export function scratchDir(prefix = 'air-ui-'): string {
  const root = process.env.AIR_UI_SCRATCH || os.tmpdir();
  return fs.mkdtempSync(path.join(root, prefix));
}

/**
 * Submit a job run whose command runs `script` (Python) on each node, with `air run`.
 * `fields` are more YAML lines (compute, max_retries…).
 */
export async function submitWorkload(
  request: APIRequestContext,
  baseURL: string,
  options: { name: string; script: string; fields?: string[] }
): Promise<ISubmitted> {
  const tracking = await mlflowReady(request, baseURL);
  const dir = scratchDir();
  fs.writeFileSync(path.join(dir, 'job.py'), options.script);
  const exe = await python();
  const yaml = [
    'experiment_name: ui-workloads',
    `mlflow_run_name: ${options.name}`,
    ...(options.fields ?? ['compute: {num_nodes: 2, accelerator_type: CPU}']),
    `command: [${JSON.stringify(exe)}, job.py]`,
    ''
  ].join('\n');
  const file = path.join(dir, 'demo.yaml');
  fs.writeFileSync(file, yaml);
  return (await air(baseURL, ['run', file], {
    MLFLOW_TRACKING_URI: tracking
  })) as ISubmitted;
}

/**
 * Run `air ARGS --output json` on the test server's data folder (`env`: more variables); what
 * it printed, parsed.
 */
export async function air(
  baseURL: string,
  args: string[],
  env: Record<string, string> = {}
): Promise<unknown> {
  const { stdout } = await run(
    PYTHON,
    ['-m', 'jupyter_air.cli', ...args, '--output', 'json'],
    {
      env: {
        ...process.env,
        JUPYTER_AIR_DATA_DIR: serverDataDir(baseURL),
        JUPYTER_AIR_KILL_GRACE_S: '3',
        ...env
      },
      timeout: 60_000
    }
  );
  return JSON.parse(stdout);
}

/** Wait until the job run's status matches. */
export async function waitForStatus(
  request: APIRequestContext,
  baseURL: string,
  id: string,
  status: RegExp,
  timeout = 60_000
): Promise<void> {
  await expect
    .poll(
      async () =>
        (await (await request.get(`${baseURL}/air/api/workloads/${id}`)).json())
          .status,
      { timeout, intervals: [500] }
    )
    .toMatch(status);
}

/**
 * A node's script: `count` lines `node N step I …` (one in `every` seconds), a warning on stderr
 * at step 3, an error at step 5, a hostile line, and an ANSI-coloured last line.
 */
export function stepsScript(count: number, every: number): string {
  return [
    'import os, sys, time',
    "n = os.environ['NODE_RANK']",
    `for i in range(${count}):`,
    "    print(f'node {n} step {i} loss {1 / (i + 1):.3f}', flush=True)",
    '    if i == 3:',
    "        print(f'WARNING: node {n} is slow', file=sys.stderr, flush=True)",
    '    if i == 5:',
    "        print(f'ERROR: node {n} lost a batch', flush=True)",
    '    if i == 6:',
    "        print(f'node {n} says <img src=x onerror=alert(1)>', flush=True)",
    `    time.sleep(${every})`,
    "print(f'node {n} done \\x1b[32mgreen\\x1b[0m', flush=True)",
    ''
  ].join('\n');
}
