// The read-only "Pi Session" document viewer in a real JupyterLab (Debian chromium): what it
// shows is checked against the engine run on the same file.
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { copyFixture, engine, hex, openFile, paths, piName, sameWindow, shot, shownRows, VIEWER, waitForTexts } from './helpers';

test.describe('Pi Session viewer', () => {
  test.skip(!fs.existsSync(paths.fixtures), `pi session fixtures not found at ${paths.fixtures}`);

  test('double-clicking a real session shows its tree', async ({ page, tmpPath }) => {
    const name = piName('branching');
    const file = copyFixture('public-twkrash-branching.jsonl', tmpPath, name);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    // Every row says what the engine's row says, except that an entry of a type the viewer does
    // not know is named ("[future_entry]") where pi draws a blank row.
    const unknown = engine<Record<string, string>>('unknown_rows', file);
    expect(Object.keys(unknown).length).toBeGreaterThan(0);
    const shown = await shownRows(page, VIEWER);
    for (const [id, text] of shown) {
      if (id in unknown) {
        expect(text).toMatch(/^\[.+\]$/);
      }
    }
    const blankUnknown = (rows: string[][]) => rows.map(([id, text]) => [id, id in unknown ? '' : text]);
    expect(blankUnknown(shown)).toEqual(blankUnknown(engine<string[][]>('rows', file)));
    const active = await page.$$eval(`${VIEWER} .pi-row.pi-active`, els => els.map(e => (e as HTMLElement).dataset.id));
    expect(active).toEqual(engine('active', file));
    // The tab is named as the server names the session (its name, else its first user message:
    // `title` in the state), the file name when the server gives neither; the tooltip keeps the file.
    const reply = await page.request.post('pi-lab/api/session/state', { data: { path: path.posix.join(tmpPath, name) } });
    const session = (await reply.json()).session as { title?: string; name?: string | null };
    if (session.title !== undefined) {
      expect(session.title).toEqual(engine<string>('title', file));
    }
    const tab = page.locator('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current');
    await expect(tab.locator('.lm-TabBar-tabLabel')).toHaveText(session.title || session.name || name);
    await expect(tab).toHaveAttribute('title', new RegExp(name.replace(/[.]/g, '\\.')));
    await expect(page.locator('.jp-PiSessionView-note')).toContainText('read-only viewer — Open in notebook');
    await expect(page.locator(`${VIEWER} .pi-meta`)).toContainText(`${engine<number>('entries', file)} entries`);
    await page.screenshot(shot('viewer-tree.png'));
  });

  test('selecting a node shows what the model sees there', async ({ page, tmpPath }) => {
    const name = piName('branching');
    const file = copyFixture('public-twkrash-branching.jsonl', tmpPath, name);
    // An entry on the branch that is not the current one: its context differs from the leaf's.
    const target = engine<string>('off_branch_message', file);
    const expected = engine<string[]>('context_at', file, { id: target });
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    await page.locator(`${VIEWER} .pi-row[data-id='${target}']`).click();
    await page.locator(`${VIEWER} .pi-tab`, { hasText: 'What the model sees' }).click();
    const pane = page.locator(`${VIEWER} .pi-pane`);
    await expect(pane.locator('.pi-pane-title')).toContainText('What the model would see with the leaf at');
    await expect(pane.locator('.pi-context-item')).toHaveCount(expected.length);
    const previews = await pane.locator('.pi-context-preview').allInnerTexts();
    expect(previews.map(p => p.trim())).toEqual(expected.map(p => p.trim()));
    await page.screenshot(shot('viewer-model-sees.png'));

    // The entry pane shows the entry itself; actions that write are explained, not offered: the
    // one item moves the leaf in this view only.
    await page.locator(`${VIEWER} .pi-tab`, { hasText: 'Entry' }).click();
    await expect(pane).toContainText(target.slice(0, 8));
    await page.locator(`${VIEWER} .pi-row[data-id='${target}'] .pi-row-menu`).click();
    await expect(page.locator(`${VIEWER} .pi-dialog`)).toContainText('read-only');
    await expect(page.locator(`${VIEWER} .pi-dialog .pi-menu-item`)).toHaveCount(1);
    await expect(page.locator(`${VIEWER} .pi-dialog .pi-menu-item`)).toContainText('this view only');
  });

  test('search and filters ask the server for a new layout', async ({ page, tmpPath }) => {
    const name = piName('large');
    const file = copyFixture('large-session.jsonl', tmpPath, name);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    await page.locator(`${VIEWER} .pi-filter[data-mode='user-only']`).click();
    const userOnly = engine<string[][]>('rows', file, { filter_mode: 'user-only' });
    await expect(page.locator(`${VIEWER} .pi-position`)).toContainText(`/${userOnly.length})`);
    await waitForTexts(page, VIEWER);
    expect(sameWindow(await shownRows(page, VIEWER), userOnly)).toBe(true);
    await page.locator(`${VIEWER} .pi-filter[data-mode='default']`).click();
    await page.locator(`${VIEWER} .pi-search`).fill('readme themes');
    const searched = engine<string[][]>('rows', file, { search: 'readme themes' });
    expect(searched.length).toBeGreaterThan(0);
    expect(searched.length).toBeLessThan(engine<string[][]>('rows', file).length);
    await expect(page.locator(`${VIEWER} .pi-position`)).toContainText(`/${searched.length})`);
    await page.screenshot(shot('viewer-search.png'));

    // The compaction preview is a dry run with the engine's numbers; the file is not touched.
    const before = fs.readFileSync(file);
    const preview = engine<any>('compact_preview', file);
    expect(preview.ok).toBe(true);
    await page.locator('.jp-PiSessionDocument .jp-PiSessionView-preview').click();
    const dialog = page.locator('.jp-Dialog .jp-PiPreview');
    await expect(dialog).toContainText(`Summarized: ${preview.summarize.count} messages`);
    await expect(dialog).toContainText(`${preview.kept.count} messages`);
    await expect(dialog).toContainText('Nothing was written');
    await page.screenshot(shot('viewer-compaction-preview.png'));
    await page.locator('.jp-Dialog button', { hasText: 'Close' }).click();
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  test('other .jsonl files open with Pi Session and get a clear message', async ({ page, tmpPath }) => {
    const name = `notes-${hex()}.jsonl`;
    fs.writeFileSync(path.join(paths.root, tmpPath, name), '{"name": "<b>alice</b>"}\n{"name": "bob"}\n');
    await page.evaluate(
      p => (window as any).jupyterapp.commands.execute('docmanager:open', { path: p, factory: 'Pi Session' }),
      path.posix.join(tmpPath, name)
    );
    const message = page.locator('.jp-PiSessionDocument .jp-PiSessionView-message');
    await expect(message).toContainText(`${name} is not a pi session`);
    await expect(message).toContainText('first JSON line is not a pi session header');
    await expect(page.locator('.jp-PiSessionDocument .pi-lab')).toHaveCount(0);
    await page.screenshot(shot('viewer-not-a-session.png'));
  });

  test('an appended entry shows up while the file is open', async ({ page, tmpPath }) => {
    const name = piName('live');
    const file = copyFixture('public-twkrash-uat.jsonl', tmpPath, name);
    const entries = engine<number>('entries', file);
    const leaf = engine<string>('leaf', file);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    const count = await page.locator(`${VIEWER} .pi-row`).count();
    const entry = {
      type: 'message', id: 'live-entry', parentId: leaf, timestamp: '2026-09-11T09:30:00.000Z',
      message: { role: 'user', content: 'a message pi wrote just now', timestamp: 1789119000000 }
    };
    fs.appendFileSync(file, JSON.stringify(entry) + '\n');
    const row = page.locator(`${VIEWER} .pi-row[data-id='live-entry']`);
    await expect(row).toBeVisible({ timeout: 15_000 });
    await expect(row.locator('.pi-row-text')).toContainText('a message pi wrote just now');
    await expect(page.locator(`${VIEWER} .pi-row`)).toHaveCount(count + 1);
    await expect(page.locator(`${VIEWER} .pi-meta`)).toContainText(`${entries + 1} entries`);
    await expect(page.locator(`${VIEWER} .pi-row.pi-leaf`)).toHaveAttribute('data-id', 'live-entry');
    // The selection followed the leaf, so the entry pane shows the new entry.
    await expect(page.locator(`${VIEWER} .pi-pane`)).toContainText('a message pi wrote just now');
    await page.screenshot(shot('viewer-live-append.png'));
  });
});
