// JupyterLab wiring for pi session files: a file type recognised by pi's file-name pattern and a
// read-only "Pi Session" document widget factory.
//
// JupyterLab matches a file type's `pattern` before it looks at extensions. The pi-session type
// therefore lists no extension: only files named the way pi names them
// (`<ISO timestamp with : and . as ->_<session id>.jsonl`) open in the viewer by default, while any
// other .jsonl keeps the editor as default and still offers "Open With > Pi Session".

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';

import { SessionSummaryView } from './summary';

export const PI_SESSION_FILE_TYPE = 'pi-session';
export const PI_SESSION_FACTORY = 'Pi Session';
/** pi's session file name: `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`. */
export const PI_SESSION_NAME_PATTERN =
  '^\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}-\\d{3}Z_[^/]+\\.jsonl$';

export type PiSessionDocument = DocumentWidget<SessionSummaryView, DocumentRegistry.ICodeModel>;

export class PiSessionWidgetFactory extends ABCWidgetFactory<
  PiSessionDocument,
  DocumentRegistry.ICodeModel
> {
  protected createNewWidget(context: DocumentRegistry.CodeContext): PiSessionDocument {
    const content = new SessionSummaryView(context);
    const widget = new DocumentWidget({ content, context });
    widget.addClass('jp-PiSessionDocument');
    return widget;
  }
}

export const piSessionPlugin: JupyterFrontEndPlugin<void> = {
  id: 'pi-lab:session-viewer',
  description: 'Opens pi coding agent session files in a read-only Pi Session viewer.',
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    app.docRegistry.addFileType({
      name: PI_SESSION_FILE_TYPE,
      displayName: 'Pi Session',
      extensions: [],
      pattern: PI_SESSION_NAME_PATTERN,
      mimeTypes: ['application/x-pi-session+jsonl'],
      fileFormat: 'text',
      contentType: 'file'
    });
    app.docRegistry.addWidgetFactory(
      new PiSessionWidgetFactory({
        name: PI_SESSION_FACTORY,
        label: 'Pi Session',
        modelName: 'text',
        fileTypes: [PI_SESSION_FILE_TYPE, 'jsonl'],
        defaultFor: [PI_SESSION_FILE_TYPE],
        readOnly: true
      })
    );
  }
};

export default piSessionPlugin;
