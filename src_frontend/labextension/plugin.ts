// JupyterLab wiring for pi session files: the pi-session file type, the read-only "Pi Session"
// viewer, the "Pi Sessions" side panel and the commands that join them.
//
// JupyterLab matches a file type's `pattern` before it looks at extensions. The pi-session type
// therefore lists no extension: only files named the way pi names them
// (`<ISO timestamp with : and . as ->_<session id>.jsonl`) open in the viewer by default, while any
// other .jsonl keeps the editor as default and still offers "Open With > Pi Session".
//
// A file's name does not say whose session it is (a renamed pi file, a Claude Code
// `<uuid>.jsonl`, a Codex `rollout-*.jsonl`), and JupyterLab picks the default viewer from the
// name, before anything is read: `openByContent` therefore makes the viewer the default for any
// `.jsonl` not yet known, asks the server's `detect` endpoint (the file's first lines), and hands a
// file that is no session back to the viewer JupyterLab would have chosen.
//
// Files under the server root open as documents. Files in pi's sessions folder are usually out
// of the file browser's reach: they open in a main-area panel keyed by their location
// (`@sessions/<project>/<file>`), which the server resolves inside the sessions folder only.

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import { ICommandPalette, MainAreaWidget, showErrorMessage, WidgetTracker } from '@jupyterlab/apputils';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { LabIcon, Toolbar, ToolbarButton } from '@jupyterlab/ui-components';
import type { CommandRegistry } from '@lumino/commands';
import type { Widget } from '@lumino/widgets';

import { isFolderLocation, PiLabApi, SESSIONS_PREFIX } from './api';
import { MetadataOnlyModelFactory, PiSessionDocument, PiSessionWidgetFactory } from './document';
import { showCompactionPreview } from './preview';
import { SessionsPanel } from './sessionsPanel';
import { snapshotRendererFactory } from './snapshotRenderer';
import { sessionTitle } from './title';
import { SessionViewerPanel } from './viewerPanel';

export const PI_SESSION_FILE_TYPE = 'pi-session';
export const PI_SESSION_FACTORY = 'Pi Session';
/** pi's session file name: `${timestamp.replace(/[:.]/g, "-")}_${sessionId}.jsonl`. */
export const PI_SESSION_NAME_PATTERN =
  '^\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}-\\d{3}Z_[^/]+\\.jsonl$';

export const COMMANDS = {
  openSession: 'pi-lab:open-session',
  openInNotebook: 'pi-lab:open-in-notebook',
  showSessions: 'pi-lab:show-sessions'
} as const;

export const piSessionIcon = new LabIcon({
  name: 'pi-lab:session',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<rect x="3" y="5" width="18" height="2.6" rx="1.3"/>' +
    '<rect x="7" y="6" width="2.6" height="13" rx="1.3"/>' +
    '<path d="M15.2 6h2.6v9.6c0 1.3.6 1.9 1.7 1.9h.5V20h-.9c-2.6 0-3.9-1.4-3.9-4.2z"/>' +
    '</g></svg>'
});

/** The viewer's toolbar: open the session where it can be changed, or preview a compaction. */
function addToolbarItems(toolbar: Toolbar<Widget>, commands: CommandRegistry, panel: SessionViewerPanel): void {
  // The viewer's dialogs and its moved-leaf bar offer the same command as the toolbar.
  panel.setOpenInNotebook(() => void commands.execute(COMMANDS.openInNotebook, { path: panel.path }));
  toolbar.addItem('pi-open-in-notebook', new ToolbarButton({
    label: 'Open in notebook',
    tooltip: 'Make a notebook next to the file that opens it in the pi_lab widget, where you can navigate and compact',
    className: 'jp-PiSessionView-openNotebook',
    onClick: () => void commands.execute(COMMANDS.openInNotebook, { path: panel.path })
  }));
  toolbar.addItem('pi-compaction-preview', new ToolbarButton({
    label: 'Compaction preview',
    tooltip: "What pi's /compact would do to the current branch now (a dry run: nothing is written)",
    className: 'jp-PiSessionView-preview',
    onClick: () => void showCompactionPreview(() => panel.compactionPreview())
  }));
}

/**
 * Makes the viewer the default for `.jsonl` files by their content (see the module comment);
 * returns what to call on each viewer document created, which hands a file that is no session
 * back to JupyterLab's own default viewer when the viewer was only chosen as the default.
 */
function openByContent(
  registry: DocumentRegistry,
  api: PiLabApi,
  commands: CommandRegistry
): (widget: PiSessionDocument) => void {
  // path -> the agent `detect` named (null: no session), and paths opened as the default on trial
  // with the factory JupyterLab would have used.
  const detected = new Map<string, string | null>();
  const onTrial = new Map<string, string>();
  const chooseDefault = registry.defaultWidgetFactory.bind(registry);
  registry.defaultWidgetFactory = (path?: string) => {
    const chosen = chooseDefault(path);
    if (!path || !/\.jsonl$/i.test(path) || chosen?.name === PI_SESSION_FACTORY || detected.get(path) === null) {
      return chosen;
    }
    const viewer = registry.getWidgetFactory(PI_SESSION_FACTORY);
    if (!viewer) {
      return chosen;
    }
    if (!detected.has(path) && chosen) {
      onTrial.set(path, chosen.name);
    }
    return viewer;
  };
  return widget => {
    const path = widget.context.path;
    const fallback = onTrial.get(path);
    onTrial.delete(path);
    void api.detect(widget.context.localPath).then(
      agent => {
        detected.set(path, agent);
        if (agent === null && fallback) {
          widget.dispose();
          void commands.execute('docmanager:open', { path, factory: fallback });
        }
      },
      () => undefined // the viewer shows the server's error itself
    );
  };
}

export const piSessionPlugin: JupyterFrontEndPlugin<void> = {
  id: 'pi-lab:session-viewer',
  description: 'Opens pi coding agent session files in a read-only Pi Session viewer, and lists pi sessions.',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette, IRenderMimeRegistry],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    rendermime: IRenderMimeRegistry | null
  ): void => {
    const api = new PiLabApi(app.serviceManager.serverSettings);
    const { commands, docRegistry } = app;
    // The snapshot a notebook saves beside the widget, drawn without a kernel or trust.
    rendermime?.addFactory(snapshotRendererFactory, snapshotRendererFactory.defaultRank);

    docRegistry.addFileType({
      name: PI_SESSION_FILE_TYPE,
      displayName: 'Pi Session',
      extensions: [],
      pattern: PI_SESSION_NAME_PATTERN,
      mimeTypes: ['application/x-pi-session+jsonl'],
      fileFormat: 'text',
      contentType: 'file',
      icon: piSessionIcon
    });
    docRegistry.addModelFactory(new MetadataOnlyModelFactory());
    const factory = new PiSessionWidgetFactory(api, {
      name: PI_SESSION_FACTORY,
      label: 'Pi Session',
      modelName: 'pi-session-metadata',
      fileTypes: [PI_SESSION_FILE_TYPE, 'jsonl'],
      defaultFor: [PI_SESSION_FILE_TYPE],
      readOnly: true
    });
    const byContent = openByContent(docRegistry, api, commands);
    factory.widgetCreated.connect((_, widget: PiSessionDocument) => {
      widget.title.icon = piSessionIcon;
      addToolbarItems(widget.toolbar, commands, widget.content);
      byContent(widget);
    });
    docRegistry.addWidgetFactory(factory);

    // Sessions outside the server root: a main-area panel per location.
    const tracker = new WidgetTracker<MainAreaWidget<SessionViewerPanel>>({ namespace: 'pi-lab-session' });
    commands.addCommand(COMMANDS.openSession, {
      label: 'Open Pi Session',
      caption: 'Open a pi session file in the read-only viewer',
      execute: async args => {
        const path = String(args.path ?? '');
        if (!path) {
          return;
        }
        // `search` (and `select`, an entry id): open with that search applied, as the Pi
        // Sessions panel does for a hit.
        const search = typeof args.search === 'string' ? args.search : undefined;
        const select = typeof args.select === 'string' && args.select ? args.select : null;
        if (!isFolderLocation(path)) {
          const opened = (await commands.execute('docmanager:open', { path, factory: PI_SESSION_FACTORY })) as
            | PiSessionDocument
            | undefined;
          if (search !== undefined && opened?.content instanceof SessionViewerPanel) {
            opened.content.applySearch(search, select);
          }
          return opened;
        }
        const existing = tracker.find(w => w.content.path === path);
        if (existing) {
          if (search !== undefined) {
            existing.content.applySearch(search, select);
          }
          app.shell.activateById(existing.id);
          return existing;
        }
        const fileName = path.split('/').pop() || path;
        const hint = typeof args.title === 'string' ? args.title : '';
        let widget: MainAreaWidget<SessionViewerPanel> | null = null;
        const folder = path.startsWith(SESSIONS_PREFIX) ? "pi's sessions folder" : 'a sessions folder';
        const caption = (title: string) => `${title}\n${path}\n(read-only; from ${folder})`;
        const content = new SessionViewerPanel(api, path, {
          search,
          select,
          title: hint || undefined,
          onTitle: title => {
            if (widget && widget.title.label !== title) {
              widget.title.label = title;
              widget.title.caption = caption(title);
            }
          }
        });
        widget = new MainAreaWidget({ content });
        widget.id = `pi-lab-session-${encodeURIComponent(path)}`;
        widget.addClass('jp-PiSessionDocument');
        widget.title.label = sessionTitle({ title: hint }, fileName);
        widget.title.caption = caption(widget.title.label);
        widget.title.icon = piSessionIcon;
        widget.title.closable = true;
        addToolbarItems(widget.toolbar, commands, content);
        await tracker.add(widget);
        app.shell.add(widget, 'main');
        app.shell.activateById(widget.id);
        return widget;
      }
    });

    commands.addCommand(COMMANDS.openInNotebook, {
      label: 'Open Pi Session in Notebook',
      caption: 'Make a notebook that opens the session in the pi_lab widget',
      execute: async args => {
        const path = String(args.path ?? '');
        try {
          const made = await api.openInNotebook(path);
          return await commands.execute('docmanager:open', { path: made.path });
        } catch (error) {
          void showErrorMessage('Open in notebook', error instanceof Error ? error.message : String(error));
        }
      }
    });

    const sessions = new SessionsPanel(api, (path, title, search, select) =>
      void commands.execute(COMMANDS.openSession, { path, title, search, select })
    );
    sessions.title.icon = piSessionIcon;
    sessions.title.caption = 'Pi Sessions';
    app.shell.add(sessions, 'left', { rank: 650 });
    commands.addCommand(COMMANDS.showSessions, {
      label: 'Show Pi Sessions',
      execute: () => app.shell.activateById(sessions.id)
    });
    palette?.addItem({ command: COMMANDS.showSessions, category: 'Pi' });

    if (restorer) {
      restorer.add(sessions, 'pi-lab-sessions');
      void restorer.restore(tracker, {
        command: COMMANDS.openSession,
        args: widget => ({ path: widget.content.path, title: widget.title.label }),
        name: widget => widget.content.path
      });
    }
  }
};

export default piSessionPlugin;
