/**
 * Browser tests: Galata's configuration, Debian's Chromium, no video (it needs a downloaded
 * ffmpeg), and a JupyterLab started on simulated GPUs.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');
const fs = require('fs');
const os = require('os');
const path = require('path');

const port = process.env.AIR_UI_PORT || '8911';
// server logs go to files (printed by scripts/test.sh when a test fails), not into the test output
const logDir = process.env.AIR_UI_LOG_DIR || '../.jupyter-test';
const prefixPort = process.env.AIR_UI_PREFIX_PORT || '8912';
// the server that node agents report to (gpu-nodes.spec.ts): nodes are never forgotten, so the
// other specs keep a server of one node
const nodesPort = process.env.AIR_UI_NODES_PORT || String(Number(port) + 3);
const chromium = process.env.AIR_CHROMIUM || '/usr/bin/chromium';

// one folder for the files the tests write (jobs' scripts, YAML), outside any git repository (a
// job's snapshot is what git would commit); the workers inherit it, the teardown removes it
process.env.AIR_UI_SCRATCH ||= fs.mkdtempSync(
  path.join(os.tmpdir(), 'air-ui-')
);

module.exports = {
  ...baseConfig,
  globalTeardown: require.resolve('./scratch-teardown.js'),
  testDir: './tests',
  // two specs at a time against the same servers: every spec makes its own notebooks, jobs and
  // experiments and looks for those only (AIR_UI_WORKERS=1 runs them one by one)
  workers: Number(process.env.AIR_UI_WORKERS || 2),
  retries: 0, // a test that passes only on a second try is a failing test
  timeout: 90 * 1000,
  reporter: [['list']],
  use: {
    ...baseConfig.use,
    baseURL: `http://localhost:${port}`,
    video: 'off',
    trace: 'off',
    launchOptions: {
      executablePath: chromium,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run'
      ]
    }
  },
  webServer: [
    {
      command: `mkdir -p ${logDir} && jlpm start 2> ${logDir}/ui-server.log`,
      url: `http://localhost:${port}/lab`,
      timeout: 180 * 1000,
      reuseExistingServer: !process.env.CI
    },
    {
      // JupyterHub-style prefix, real NVML backend (no GPU data on a machine without a driver),
      // Jupyter's XSRF check on
      command: `jupyter lab --config jupyter_server_test_config.py --ServerApp.base_url=/user/alice/ 2> ${logDir}/ui-server-prefix.log`,
      url: `http://localhost:${prefixPort}/user/alice/lab`,
      env: {
        ...process.env,
        AIR_UI_PORT: prefixPort,
        AIR_UI_XSRF: '1',
        JUPYTER_AIR_GPU_BACKEND: 'auto'
      },
      timeout: 180 * 1000,
      reuseExistingServer: !process.env.CI
    },
    {
      // the Jupyter host of a simulated cluster: node "gpu-a", agents lost 8 s after they stop
      command: `jupyter lab --config jupyter_server_test_config.py 2> ${logDir}/ui-server-nodes.log`,
      url: `http://localhost:${nodesPort}/lab`,
      env: {
        ...process.env,
        AIR_UI_PORT: nodesPort,
        AIR_UI_NODE_NAME: 'gpu-a',
        AIR_UI_INTERVAL: '1',
        AIR_UI_IDLE: '120',
        AIR_UI_LOST_AFTER: '8'
      },
      timeout: 180 * 1000,
      reuseExistingServer: !process.env.CI
    }
  ]
};
