/**
 * Browser benchmarks (not part of `make test`): the GPU panel's render time per update for
 * 8 simulated GPUs with a full history (one node, and 4 nodes through node agents), the
 * cluster overview of 64 simulated nodes, and the README screenshot. Prints figures.
 */
const base = require('./playwright.config');

const port = process.env.AIR_UI_BENCH_PORT || '8913';

module.exports = {
  ...base,
  testDir: './bench',
  retries: 0,
  timeout: 240 * 1000,
  use: { ...base.use, baseURL: `http://localhost:${port}` },
  webServer: {
    command: `jupyter lab --config jupyter_server_test_config.py 2> ../.jupyter-test/ui-server-bench.log`,
    url: `http://localhost:${port}/lab`,
    env: {
      ...process.env,
      AIR_UI_PORT: port,
      AIR_UI_GPUS: process.env.AIR_UI_GPUS || '8',
      AIR_UI_INTERVAL: process.env.AIR_UI_INTERVAL || '0.05',
      AIR_UI_HISTORY: process.env.AIR_UI_HISTORY || '45',
      AIR_UI_IDLE: '600'
    },
    timeout: 180 * 1000,
    reuseExistingServer: false
  }
};
