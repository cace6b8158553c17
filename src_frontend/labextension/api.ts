// The session viewer's REST API (pi_lab/server/handlers.py), through JupyterLab's server
// connection, which adds the token or cookie and the XSRF header Jupyter requires.

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { Gauge, SessionInfo } from '../core/transport';

export const API_ROOT = 'pi-lab/api';
export const SESSIONS_PREFIX = '@sessions/';
/**
 * Locations in a folder outside the server root (pi's sessions folder, Claude Code's and
 * Codex's folders, folders added with `PiLabConfig.extra_session_dirs`): the server resolves
 * them inside that folder only (`PiLabConfig.session_folders`).
 */
const FOLDER_LOCATION = /^@(sessions|claude\/\d+|codex\/\d+|dir\/\d+)\//;

export function isFolderLocation(path: string): boolean {
  return FOLDER_LOCATION.test(path);
}

/** The agents whose sessions pi_lab reads, as the server names them, and as people do. */
export const AGENT_LABELS: Record<string, string> = { pi: 'pi', 'claude-code': 'Claude Code', codex: 'Codex' };

/** An error answer of the server: its HTTP status, its `reason` and its message. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string | null
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The layout a viewer asks for: pi's /tree filter, its search and the folded entries. */
export interface ViewParams {
  filter_mode: string;
  search: string;
  folded: string[];
  /** The note filter: "", "noted" or "tag:<tag>" (pi_lab/view/notes.py). */
  note_filter: string;
}

/** The numbers of the gauge and of the compaction preview. */
export interface GaugeSettings {
  context_window: number;
  reserve_tokens: number;
  keep_recent_tokens: number;
}

export interface FileFacts {
  size: number;
  mtime: number;
  generation: number;
  skipped_lines: number;
  first_skipped_lines: number[];
  incomplete_tail: boolean;
}

/** `POST session/state` (and the body of a `layout` or `delta` poll answer). */
export interface SessionState {
  generation: number;
  version: number;
  row_count: number;
  leaf_id: string | null;
  session: SessionInfo;
  gauge: Gauge;
  file: FileFacts;
  location: { path: string; area: 'root' | 'sessions'; name: string };
  /** The notes store's version: a change makes the viewer ask for `notes` again. */
  notes_version?: number;
}

export type PollReply =
  | { kind: 'none'; version: number; generation: number; notes_version?: number }
  | (SessionState & { kind: 'layout' })
  | (SessionState & { kind: 'delta'; deltas: import('../core/transport').DeltaMessage[] });

/** A piece of a matching message: `parts` are `[text, marked]` pairs, always written as text. */
export interface SearchSnippet {
  parts: [string, boolean][];
  role: string;
  entry_id: string | null;
}

export interface SearchHits {
  /** How many messages match (at most 1000 are counted: `capped`). */
  count: number;
  capped: boolean;
  snippets: SearchSnippet[];
}

export interface ListedSession {
  location: string;
  file: string;
  id: string;
  name: string | null;
  /** The session's name, else its first user message (the server's `session_title`). */
  title: string;
  cwd: string;
  first_message: string;
  message_count: number;
  created: string;
  modified: string;
  modified_ms: number;
  size: number;
  /** Which agent wrote it: `pi`, `claude-code` or `codex`. */
  agent?: string;
  /** With a search: what matched. */
  hits?: SearchHits;
}

export interface SessionGroup {
  dir: string;
  cwd: string;
  newest: number;
  more: number;
  sessions: ListedSession[];
}

export interface SessionListing {
  folder: string;
  exists: boolean;
  groups: SessionGroup[];
  total: number;
  shown: number;
  query: string;
  /** Files named like sessions that are not regular files (FIFOs, devices, folders): never opened. */
  skipped?: { file: string; reason: string }[];
  /** Every folder listed: pi's, Claude Code's, Codex's and configured ones (`agent` null: any). */
  folders?: { prefix: string; agent: string | null; exists: boolean }[];
}

export class PiLabApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  private url(parts: string[], query?: Record<string, string>): string {
    const url = URLExt.join(this.settings.baseUrl, API_ROOT, ...parts);
    return query ? url + URLExt.objectToQueryString(query) : url;
  }

  private async send(parts: string[], init: RequestInit, query?: Record<string, string>): Promise<Response> {
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(this.url(parts, query), init, this.settings);
    } catch (error) {
      throw new ApiError(`The Jupyter server cannot be reached (${String(error)})`, 0, 'network');
    }
    if (!response.ok) {
      let message = `${response.status} ${response.statusText}`;
      let reason: string | null = null;
      try {
        const body = (await response.json()) as { message?: string; reason?: string | null };
        message = body.message || message;
        reason = body.reason ?? null;
      } catch {
        // not JSON: keep the status line
      }
      throw new ApiError(message, response.status, reason);
    }
    return response;
  }

  async post<T>(parts: string[], body: unknown): Promise<T> {
    const response = await this.send(parts, { method: 'POST', body: JSON.stringify(body) });
    return (await response.json()) as T;
  }

  async postBinary(parts: string[], body: unknown): Promise<ArrayBuffer> {
    const response = await this.send(parts, { method: 'POST', body: JSON.stringify(body) });
    return response.arrayBuffer();
  }

  async get<T>(parts: string[], query?: Record<string, string>): Promise<T> {
    const response = await this.send(parts, { method: 'GET' }, query);
    return (await response.json()) as T;
  }

  listSessions(query = ''): Promise<SessionListing> {
    return this.get<SessionListing>(['sessions'], query ? { q: query } : undefined);
  }

  /** Which agent's session the file is, from its first lines (`null`: none pi_lab reads). */
  async detect(path: string): Promise<string | null> {
    const reply = await this.get<{ agent: string | null }>(['detect'], { path });
    return reply.agent;
  }

  openInNotebook(path: string): Promise<{ path: string; created: boolean }> {
    return this.post(['open-in-notebook'], { path });
  }
}
