// Entry point of the pi-lab JupyterLab extension: JupyterLab loads this module's default export.
import { piSessionPlugin } from './labextension/plugin';

export {
  COMMANDS,
  PI_SESSION_FACTORY,
  PI_SESSION_FILE_TYPE,
  PI_SESSION_NAME_PATTERN
} from './labextension/plugin';
export { PiSessionWidgetFactory } from './labextension/document';

export default [piSessionPlugin];
