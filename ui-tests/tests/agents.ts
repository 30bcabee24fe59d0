/**
 * Node agents for the browser tests and the render benchmark: real `air agent` processes on
 * simulated GPUs reporting to the test server, each with its own token minted by
 * `air agent-token` in the server's data folder, as a user would start them on other nodes.
 * Stopped by their pid (SIGTERM), never by name. Not a spec: Playwright's test match skips it.
 */
import { ChildProcess, execFile, spawn } from 'child_process';
import { promisify } from 'util';

import { serverDataDir } from './workloads-helpers';

const run = promisify(execFile);

/** The Python with jupyter-air (the project's .venv when scripts/env.sh set PATH). */
const PYTHON = process.env.AIR_PYTHON || 'python';

/** How an agent samples. */
export interface IAgentOptions {
  /** Seconds between samples (default 1). */
  interval?: number;
  /** Simulated GPUs (default 2). */
  gpus?: number;
  /** `JUPYTER_AIR_SIMULATED_FAULTS`, e.g. `1:xid`. */
  faults?: string;
}

/** The agents started against one test server. */
export class Agents {
  constructor(baseURL: string) {
    this._server = `${baseURL}/`;
    this._dataDir = serverDataDir(baseURL);
  }

  /**
   * Start an agent for `node` (its token is minted the first time, and kept for a restart);
   * resolves once it runs.
   */
  async start(node: string, options: IAgentOptions = {}): Promise<void> {
    let token = this._tokens.get(node);
    if (token === undefined) {
      const { stdout } = await run(
        PYTHON,
        [
          '-m',
          'jupyter_air.cli',
          'agent-token',
          node,
          '--data-dir',
          this._dataDir
        ],
        { timeout: 30_000 }
      );
      token = stdout.trim();
      this._tokens.set(node, token);
    }
    const child = spawn(
      PYTHON,
      [
        '-m',
        'jupyter_air.cli',
        'agent',
        '--server',
        this._server,
        '--node',
        node,
        '--interval',
        String(options.interval ?? 1),
        '--backend',
        'simulated'
      ],
      {
        env: {
          ...process.env,
          JUPYTER_AIR_AGENT_TOKEN: token,
          JUPYTER_AIR_SIMULATED_GPUS: String(options.gpus ?? 2),
          JUPYTER_AIR_SIMULATED_FAULTS: options.faults ?? ''
        },
        stdio: ['ignore', 'pipe', 'pipe']
      }
    );
    let output = '';
    child.stderr!.on('data', chunk => (output += String(chunk)));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve());
      child.once('exit', code =>
        reject(new Error(`air agent ${node} exited (${code}): ${output}`))
      );
    });
    this._started.set(node, child);
  }

  /** Stop one agent (its node goes stale, then lost, at the server). */
  async stop(node: string): Promise<void> {
    const child = this._started.get(node);
    this._started.delete(node);
    if (!child || child.exitCode !== null) {
      return;
    }
    const exited = new Promise<void>(resolve =>
      child.once('exit', () => resolve())
    );
    child.kill('SIGTERM');
    await exited;
  }

  /** Stop every agent started here. */
  async stopAll(): Promise<void> {
    await Promise.all(
      Array.from(this._started.keys()).map(node => this.stop(node))
    );
  }

  private readonly _server: string;
  private readonly _tokens = new Map<string, string>();
  private readonly _dataDir: string;
  private readonly _started = new Map<string, ChildProcess>();
}
