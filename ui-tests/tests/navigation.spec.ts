// Going somewhere in the read-only Pi Session viewer of a real JupyterLab: Enter on a row moves
// the leaf in this view only (what the model sees, the gauge and the timeline follow it; the
// file is untouched), with Open in notebook for a real move and a way back; a new filter says it
// is being laid out until its rows arrive; the "go to entry id" box. Each was seen failing first.
import { expect, test } from '@jupyterlab/galata';
import { createHash } from 'crypto';
import * as fs from 'fs';

import { copyFixture, engine, openFile, paths, piName, shot, VIEWER, waitForTexts } from './helpers';

const sha = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

test.describe('Pi Session viewer navigation', () => {
  test.skip(!fs.existsSync(paths.fixtures), `pi session fixtures not found at ${paths.fixtures}`);

  test('Enter on a row moves the leaf in this view only', async ({ page, tmpPath }) => {
    const name = piName('branching');
    const file = copyFixture('public-twkrash-branching.jsonl', tmpPath, name);
    const before = sha(file);
    const target = engine<string>('off_branch_message', file);
    const moved = engine<{ leaf: string; estimate_total: number }>('move_in_view', file, { id: target });
    const fileLeaf = engine<string>('leaf', file);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    const rows = page.locator(`${VIEWER} .pi-rows`);
    await page.locator(`${VIEWER} .pi-row[data-id='${target}']`).click();
    await rows.press('Enter');
    const dialog = page.locator(`${VIEWER} .pi-dialog`);
    await expect(dialog).toContainText('the session file is untouched');
    const move = dialog.getByRole('button', { name: 'Move the leaf here (this view only)' });
    await expect(move).toBeFocused();
    await expect(dialog.getByRole('button', { name: 'Open in notebook' })).toBeVisible();
    await page.screenshot(shot('viewer-go-to-dialog.png'));
    // The keyboard stays in the dialog; Escape gives the tree its row back.
    await page.keyboard.press('Tab');
    await expect(dialog.getByRole('button', { name: 'Open in notebook' })).toBeFocused();
    await page.keyboard.press('Tab');
    await expect(dialog.locator('.pi-close')).toBeFocused();
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await expect(rows).toBeFocused();

    // Move: the gauge is asked for at the new leaf, the timeline follows it.
    const gaugeAnswer = page.waitForResponse(r => r.url().includes('/pi-lab/api/session/gauge') && (r.request().postData() ?? '').includes(moved.leaf));
    const timelineAsked = page.waitForRequest(r => r.url().includes('/pi-lab/api/session/timeline') && (r.postDataJSON()?.args?.leaf_id ?? null) === moved.leaf);
    await rows.press('Enter');
    await dialog.getByRole('button', { name: 'Move the leaf here (this view only)' }).press('Enter');
    const gauge = await (await gaugeAnswer).json();
    expect(gauge.leaf_id).toBe(moved.leaf);
    expect(gauge.estimate_total).toBe(moved.estimate_total);
    await timelineAsked;
    const bar = page.locator(`${VIEWER} .pi-view-leaf-bar`);
    await expect(bar).toContainText('in this view only; the file is untouched');
    await expect(page.locator(`${VIEWER} .pi-row.pi-view-leaf`)).toHaveAttribute('data-id', moved.leaf);
    await expect(rows).toBeFocused();
    // What the model sees follows: the moved leaf is selected.
    await page.locator(`${VIEWER} .pi-tab`, { hasText: 'What the model sees' }).click();
    await expect(page.locator(`${VIEWER} .pi-pane .pi-pane-title`)).toContainText(moved.leaf.slice(0, 8));
    await page.screenshot(shot('viewer-leaf-moved.png'));
    expect(sha(file)).toBe(before);

    // Back to the file's leaf.
    await bar.getByRole('button', { name: "Back to the file's leaf" }).click();
    await expect(bar).toBeHidden();
    await expect(page.locator(`${VIEWER} .pi-row.pi-view-leaf`)).toHaveCount(0);
    await expect(page.locator(`${VIEWER} .pi-row.pi-selected`)).toHaveAttribute('data-id', fileLeaf);
    expect(sha(file)).toBe(before);

    // The dialog's Open in notebook is the toolbar's: a notebook beside the file, opened.
    await page.locator(`${VIEWER} .pi-row[data-id='${target}']`).click();
    await rows.press('Enter');
    await dialog.getByRole('button', { name: 'Open in notebook' }).click();
    await expect(page.locator('.lm-TabBar-tab.lm-mod-current', { hasText: name.replace('.jsonl', '.ipynb') })).toBeVisible();
  });

  test('a new filter says it is being laid out until its rows arrive', async ({ page, tmpPath }) => {
    const name = piName('large');
    copyFixture('large-session.jsonl', tmpPath, name);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    const position = page.locator(`${VIEWER} .pi-position`);
    await expect(position).toContainText('/');
    // Hold the server's answer for the new layout: until it comes, the old count must not show.
    let release: () => void = () => undefined;
    const held = new Promise<void>(resolve => (release = resolve));
    await page.route('**/pi-lab/api/session/state', async route => {
      await held;
      await route.continue();
    });
    await page.locator(`${VIEWER} .pi-filter[data-mode='user-only']`).click();
    await expect(position).toHaveText('laying out "user only"…');
    await expect(page.locator(`${VIEWER} .pi-rows`)).toHaveAttribute('aria-busy', 'true');
    await page.screenshot(shot('viewer-laying-out.png'));
    release();
    await expect(position).toContainText('[user only]');
    await expect(page.locator(`${VIEWER} .pi-rows`)).toHaveAttribute('aria-busy', 'false');
    await page.unroute('**/pi-lab/api/session/state');
    // "all" says what it still leaves out, where the count is.
    await page.locator(`${VIEWER} .pi-filter[data-mode='all']`).click();
    await expect(page.locator(`${VIEWER} .pi-filter-note`)).toContainText('tool-call-only replies hidden');
  });

  test('the go to entry id box selects an entry by its id or its start', async ({ page, tmpPath }) => {
    const name = piName('branching');
    const file = copyFixture('public-twkrash-branching.jsonl', tmpPath, name);
    const target = engine<string>('off_branch_message', file);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    const box = page.locator(`${VIEWER} .pi-goto`);
    await box.fill(target);
    await box.press('Enter');
    await expect(page.locator(`${VIEWER} .pi-row.pi-selected`)).toHaveAttribute('data-id', target);
    await expect(page.locator(`${VIEWER} .pi-rows`)).toBeFocused();
    await box.fill('no-such-id');
    await box.press('Enter');
    await expect(page.locator(`${VIEWER} .pi-banner`)).toContainText('No entry has an id starting with "no-such-id"');
    await expect(page.locator(`${VIEWER} .pi-row.pi-selected`)).toHaveAttribute('data-id', target);
    await page.screenshot(shot('viewer-goto-unknown.png'));
  });
});
