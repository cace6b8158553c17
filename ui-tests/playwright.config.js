// Galata (JupyterLab's Playwright helpers) for the pi-lab extension, set up for this machine:
// Debian's chromium (no browser download, ever), no video (it needs Playwright's own ffmpeg),
// one worker (2 cores: each worker needs its own Lab page and kernel), generous timeouts.
const fs = require('fs');
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');
const paths = require('./paths');

// A CI run starts from empty folders (locally a running server may be reused, so nothing is
// removed). Only the main process does this: each worker loads this file again.
if (process.env.CI && process.env.TEST_WORKER_INDEX === undefined) {
  fs.rmSync(paths.base, { recursive: true, force: true });
}
for (const folder of [paths.root, paths.sessions, `${paths.base}/config`, `${paths.base}/runtime`]) {
  fs.mkdirSync(folder, { recursive: true });
}

module.exports = {
  ...baseConfig,
  testDir: './tests',
  reporter: [['list']],
  workers: 1,
  retries: 0,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  use: {
    ...baseConfig.use,
    baseURL: `http://127.0.0.1:${paths.port}`,
    viewport: { width: 1280, height: 800 },
    video: 'off',
    trace: 'off',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--no-sandbox', // required as root
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage'
      ]
    }
  },
  webServer: {
    command: 'jlpm start',
    url: `http://127.0.0.1:${paths.port}/lab`,
    timeout: 120_000,
    reuseExistingServer: !process.env.CI,
    env: {
      ...process.env,
      JUPYTERLAB_GALATA_ROOT_DIR: paths.root,
      PI_CODING_AGENT_DIR: paths.agent,
      PI_LAB_UI_PORT: paths.port,
      JUPYTER_CONFIG_DIR: `${paths.base}/config`,
      JUPYTER_RUNTIME_DIR: `${paths.base}/runtime`
    }
  }
};
