// Entry point of the pi-lab JupyterLab extension: JupyterLab loads this module's default export.
import { piSessionPlugin } from './labextension/plugin';

export {
  PI_SESSION_FACTORY,
  PI_SESSION_FILE_TYPE,
  PI_SESSION_NAME_PATTERN,
  PiSessionWidgetFactory
} from './labextension/plugin';
export { summarizeSession } from './labextension/summary';

export default [piSessionPlugin];
