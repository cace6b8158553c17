// Where the UI tests' JupyterLab keeps its files, shared by playwright.config.js (which starts
// the server) and the specs (which write session files there and read them with the engine).
// PI_LAB_UI_PORT picks the port (default 18888, away from a developer's 8888); every folder is
// derived from it, so two runs on different ports never share files.
const os = require('os');
const path = require('path');

const port = process.env.PI_LAB_UI_PORT || '18888';
const base = process.env.PI_LAB_UI_BASE || path.join(os.tmpdir(), `pi-lab-ui-tests-${port}`);

module.exports = {
  port,
  base,
  /** The server root (galata's JUPYTERLAB_GALATA_ROOT_DIR); each test works in its tmpPath inside. */
  root: path.join(base, 'root'),
  /** pi's agent folder; the Pi Sessions panel lists `sessions` inside it (never the real ~/.pi). */
  agent: path.join(base, 'pi-agent'),
  sessions: path.join(base, 'pi-agent', 'sessions'),
  /** The Python that runs the engine for expected values: the project's venv unless told. */
  python: process.env.PI_LAB_PYTHON || path.resolve(__dirname, '..', '.venv', 'bin', 'python'),
  fixtures: process.env.PI_LAB_FIXTURES || path.resolve(__dirname, '..', '..', 'shared', 'fixtures', 'pi-sessions')
};
