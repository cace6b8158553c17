// The "Pi Session" document: JupyterLab opens pi session files (and, under "Open With", any
// .jsonl) in the read-only viewer.
//
// The document's model never holds the file: its factory's file format is null, so JupyterLab
// asks the contents API for the file's metadata only. The viewer gets everything from the
// pi_lab server extension, which parses the file once and sends the rows the view shows, so a
// 190 MB session does not travel to the browser.

import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, TextModelFactory } from '@jupyterlab/docregistry';
import type { Contents } from '@jupyterlab/services';

import { PiLabApi } from './api';
import { SessionViewerPanel } from './viewerPanel';

export const PI_SESSION_MODEL = 'pi-session-metadata';

/** A text model factory that loads no content (see the module comment). */
export class MetadataOnlyModelFactory extends TextModelFactory {
  get name(): string {
    return PI_SESSION_MODEL;
  }

  get fileFormat(): Contents.FileFormat {
    return null;
  }
}

/**
 * A document widget whose tab label is the session's title, never a rename of the file.
 *
 * JupyterLab's DocumentWidget treats a change of its tab label as the user renaming the file
 * (`_onTitleChanged` calls `context.rename(label)`), so naming the tab after the session would
 * rename the user's pi session to its first message. The viewer only reads; it disconnects that
 * handler. (tests/browser/test_browser_lab.py checks the file keeps its name.)
 */
export class PiSessionDocument extends DocumentWidget<SessionViewerPanel, DocumentRegistry.ICodeModel> {
  constructor(options: DocumentWidget.IOptions<SessionViewerPanel, DocumentRegistry.ICodeModel>) {
    super(options);
    const renamer = (this as unknown as { _onTitleChanged?: (...args: unknown[]) => unknown })._onTitleChanged;
    if (renamer) {
      this.title.changed.disconnect(renamer, this);
    }
  }

  /**
   * A link `session.jsonl#<entry id>` (in a notebook's output, e.g. the corpus's
   * `Corpus.links(table)`) opens the file and JupyterLab hands the fragment here: select that entry.
   */
  setFragment(fragment: string): void {
    const id = decodeURIComponent(fragment.replace(/^#/, ''));
    if (id) {
      this.content.select(id);
    }
  }
}

export class PiSessionWidgetFactory extends ABCWidgetFactory<PiSessionDocument, DocumentRegistry.ICodeModel> {
  constructor(
    private readonly api: PiLabApi,
    options: DocumentRegistry.IWidgetFactoryOptions<PiSessionDocument>
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.CodeContext): PiSessionDocument {
    // The tab says what the session is (its name or first request), not its timestamp file name;
    // the file name stays in the tab's tooltip.
    let widget: PiSessionDocument | null = null;
    const content = new SessionViewerPanel(this.api, context.localPath, {
      onTitle: title => {
        if (widget && widget.title.label !== title) {
          widget.title.label = title;
          widget.title.caption = `${title}\n${context.localPath}\n(read-only)`;
        }
      }
    });
    widget = new PiSessionDocument({ content, context });
    widget.addClass('jp-PiSessionDocument');
    context.pathChanged.connect(() => content.setPath(context.localPath));
    return widget;
  }
}
