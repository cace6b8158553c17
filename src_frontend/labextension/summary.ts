// Placeholder body of the "Pi Session" document: the session id and the entry count, as text.
// The real viewer (src_frontend/core/ bound to the server's REST payloads) replaces this class;
// the file type and factory wiring in plugin.ts stays as it is.

import { DocumentRegistry } from '@jupyterlab/docregistry';
import { Widget } from '@lumino/widgets';

/** What the first lines of a JSONL text say about a pi session. */
export interface ISessionSummary {
  /** The header's `id`, or null when the first line is not a pi session header. */
  sessionId: string | null;
  /** Non-empty lines after the header (entries, including any malformed ones). */
  entryCount: number;
  /** Lines after the header that do not parse as a JSON object. */
  invalidCount: number;
}

function parseObject(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** Summarise a session file's text. Never throws, whatever the text holds. */
export function summarizeSession(text: string): ISessionSummary {
  const lines = text.split('\n').filter(line => line.trim() !== '');
  const header = lines.length > 0 ? parseObject(lines[0]) : null;
  const isSession = header !== null && header.type === 'session';
  const sessionId = isSession && typeof header.id === 'string' ? header.id : null;
  const entries = isSession ? lines.slice(1) : lines;
  let invalidCount = 0;
  for (const line of entries) {
    if (parseObject(line) === null) {
      invalidCount += 1;
    }
  }
  return { sessionId, entryCount: entries.length, invalidCount };
}

/** Read-only text summary of one session file; redraws when the file's content changes. */
export class SessionSummaryView extends Widget {
  constructor(context: DocumentRegistry.CodeContext) {
    super();
    this._context = context;
    this.addClass('jp-PiSessionView');
    this._heading = document.createElement('div');
    this._heading.className = 'jp-PiSessionView-id';
    this._detail = document.createElement('div');
    this._detail.className = 'jp-PiSessionView-count';
    this.node.append(this._heading, this._detail);
    this._heading.textContent = 'Loading…';

    void context.ready.then(() => {
      if (this.isDisposed) {
        return;
      }
      this._update();
      context.model.contentChanged.connect(this._update, this);
    });
  }

  private _update(): void {
    const summary = summarizeSession(this._context.model.toString());
    if (summary.sessionId !== null) {
      this._heading.textContent = `Session ${summary.sessionId}`;
    } else {
      this._heading.textContent = 'Not a pi session file (the first line is not a session header)';
    }
    let detail = `${summary.entryCount} ${summary.entryCount === 1 ? 'entry' : 'entries'}`;
    if (summary.invalidCount > 0) {
      detail += `, ${summary.invalidCount} not valid JSON`;
    }
    this._detail.textContent = detail;
  }

  private readonly _context: DocumentRegistry.CodeContext;
  private readonly _heading: HTMLDivElement;
  private readonly _detail: HTMLDivElement;
}
