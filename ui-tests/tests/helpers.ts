// Shared steps of the pi-lab UI tests: expected values from the engine (run in Python on the
// same file), pi-style file names, and waiting for the viewer's rows.
import { execFileSync } from 'child_process';
import { randomBytes, randomInt } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

import type { Page } from '@playwright/test';

// eslint-disable-next-line @typescript-eslint/no-var-requires
export const paths = require('../paths') as {
  port: string;
  base: string;
  root: string;
  agent: string;
  sessions: string;
  python: string;
  fixtures: string;
};

export const VIEWER = '.jp-PiSessionDocument .pi-lab';
export const SCREENSHOTS = process.env.PI_LAB_SCREENSHOTS || '/tmp/pi-lab-screenshots';
fs.mkdirSync(SCREENSHOTS, { recursive: true });

export function shot(name: string): { path: string } {
  return { path: path.join(SCREENSHOTS, name) };
}

/** The engine's answer to `op` for `file` (see engine.py). */
export function engine<T = unknown>(op: string, file: string, args?: Record<string, unknown>): T {
  const argv = [path.join(__dirname, 'engine.py'), op, file];
  if (args) {
    argv.push(JSON.stringify(args));
  }
  return JSON.parse(execFileSync(paths.python, argv, { encoding: 'utf-8' })) as T;
}

/** A file name the way pi names its sessions (so the viewer is the default). */
export function piName(stem: string): string {
  return `2026-01-0${randomInt(1, 10)}T10-00-00-000Z_${stem}-${randomBytes(3).toString('hex')}.jsonl`;
}

export function hex(bytes = 3): string {
  return randomBytes(bytes).toString('hex');
}

/** Copy a real pi session into the test's folder under the server root; its path on disk. */
export function copyFixture(name: string, tmpPath: string, dest: string): string {
  const target = path.join(paths.root, tmpPath, dest);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(path.join(paths.fixtures, name), target);
  return target;
}

/** Row texts arrive after the structure; wait until none is a placeholder. */
export async function waitForTexts(page: Page, scope: string): Promise<void> {
  await page.locator(`${scope} .pi-row`).first().waitFor();
  await page.waitForFunction(
    (s: string) => {
      const t = [...document.querySelectorAll(s + ' .pi-row .pi-row-text')];
      return t.length > 0 && t.every(e => e.textContent !== '…');
    },
    scope
  );
}

/** `[id, text]` of the rows on screen (the list is windowed: only those are in the page). */
export async function shownRows(page: Page, scope: string): Promise<string[][]> {
  return page.$$eval(`${scope} .pi-row`, els =>
    els.map(e => [(e as HTMLElement).dataset.id ?? '', e.querySelector('.pi-row-text')?.textContent ?? ''])
  );
}

/** The rows on screen are a contiguous slice of the engine's rows. */
export function sameWindow(shown: string[][], expected: string[][]): boolean {
  if (shown.length === 0) {
    return false;
  }
  const start = expected.findIndex(row => row[0] === shown[0][0]);
  return start >= 0 && JSON.stringify(expected.slice(start, start + shown.length)) === JSON.stringify(shown);
}

/** Open `name` in the test's folder with a double click in the file browser. */
export async function openFile(page: Page & { filebrowser: { refresh(): Promise<void> } }, name: string): Promise<void> {
  await page.filebrowser.refresh();
  const item = page.locator('.jp-DirListing-item', { has: page.getByText(name, { exact: true }) });
  await item.dblclick();
}

export interface SessionMessage {
  role: 'user' | 'assistant';
  text: string;
}

/** Write a small pi session (header + alternating messages) under `folder`; its path. */
export function writeSession(folder: string, sid: string, cwd: string, texts: string[], month = 1, name?: string): string {
  fs.mkdirSync(folder, { recursive: true });
  const file = path.join(folder, `2026-0${month}-01T00-00-00-000Z_${sid}.jsonl`);
  const lines: unknown[] = [
    { type: 'session', version: 3, id: sid, timestamp: `2026-0${month}-01T00:00:00.000Z`, cwd }
  ];
  let parent: string | null = null;
  texts.forEach((text, i) => {
    const id = `${sid}-${i}`;
    const role = i % 2 === 0 ? 'user' : 'assistant';
    const content = role === 'user' ? text : [{ type: 'text', text }];
    lines.push({
      type: 'message',
      id,
      parentId: parent,
      timestamp: `2026-0${month}-01T00:00:0${i}.000Z`,
      message: { role, content, timestamp: 1767225600000 + month * 2_600_000_000 + i }
    });
    parent = id;
  });
  if (name !== undefined) {
    lines.push({ type: 'session_info', id: `${sid}-name`, parentId: parent, timestamp: `2026-0${month}-01T00:00:09.000Z`, name });
  }
  fs.writeFileSync(file, lines.map(line => JSON.stringify(line) + '\n').join(''));
  return file;
}

/** The notes file every viewer of the UI tests' server shares (PiLabConfig.notes_file's default). */
export function notesFile(): string {
  return path.join(paths.root, 'pi-lab-notes.jsonl');
}

/** Write a model's finding into the server's notes file, as `Corpus.ask` writes one (NoteStore.add). */
export function writeFinding(sessionId: string, entryId: string, text: string, tag: string, model: string, question: string): void {
  const code = [
    'import sys',
    'from pi_lab.research.notes import NoteStore',
    'store, sid, entry, text, tag, model, question = sys.argv[1:8]',
    'store = NoteStore(store)',
    'store.add(sid, entry, text, tag=tag, author=model, source="model:" + model, question=question)'
  ].join('\n');
  execFileSync(paths.python, ['-c', code, notesFile(), sessionId, entryId, text, tag, model, question]);
}
