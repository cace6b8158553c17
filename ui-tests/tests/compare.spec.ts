// The Compare pane of the read-only "Pi Session" viewer in a real JupyterLab (Debian chromium):
// the seed's worked example (JWT leaf A3 against cookie leaf A4, before and after C1) and a real
// fixture's two tips, each checked against the Python functions run on the same file.
import { expect, test } from '@jupyterlab/galata';
import type { Page } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

import { copyFixture, openFile, paths, piName, shot, waitForTexts, VIEWER } from './helpers';

const PANE = `${VIEWER} .pi-compare`;

/** Run `code` in the project's Python with `sys.argv[1:] = args`; its JSON output. */
function py<T = unknown>(code: string, ...args: string[]): T {
  const out = execFileSync(paths.python, ['-c', code, ...args], {
    encoding: 'utf-8',
    cwd: path.resolve(__dirname, '..', '..', 'tests')
  });
  return JSON.parse(out) as T;
}

const OPEN = `
import json, sys
from pathlib import Path
from pi_lab.session.readonly import session_from_bytes
from pi_lab.view import compare_branches, context_diff, context_search
p = Path(sys.argv[1])
sm = session_from_bytes(p.read_bytes(), p.name)
`;

interface Diff {
  both: { source_id: string }[];
  only_a: { source_id: string }[];
  only_b: { source_id: string }[];
  tokens_a: number;
  tokens_b: number;
  delta: number;
}

function diff(file: string, a: string, b: string): Diff {
  return py<Diff>(`${OPEN}print(json.dumps(context_diff(sm, sys.argv[2], sys.argv[3])))`, file, a, b);
}

function branches(file: string, a: string, b: string): { common_ancestor: string | null; a: string[]; b: string[] } {
  return py(`${OPEN}print(json.dumps(compare_branches(sm, sys.argv[2], sys.argv[3])))`, file, a, b);
}

/** The seed explainer's worked example, written under the test's folder with a pi-style name. */
function writeSeed(tmpPath: string, name: string): string {
  const target = path.join(paths.root, tmpPath, name);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, py<string>('import json, helpers; print(json.dumps(helpers.SEED_SECTION_14))'));
  return target;
}

async function openCompare(page: Page, name: string): Promise<void> {
  await openFile(page as never, name);
  await waitForTexts(page, VIEWER);
  await page.locator(`${VIEWER} .pi-tab`, { hasText: 'Compare' }).click();
  await expect(page.locator(PANE)).toBeVisible();
}

async function pick(page: Page, side: 'a' | 'b', id: string): Promise<void> {
  // A re-layout (a filter change) can move the row under the pointer: click until it is selected.
  await expect(async () => {
    await page.locator(`${VIEWER} .pi-row[data-id='${id}']`).click();
    await expect(page.locator(`${VIEWER} .pi-row.pi-selected`)).toHaveAttribute('data-id', id, { timeout: 2000 });
  }).toPass();
  const button = page.locator(`${PANE} .pi-cmp-set[data-side='${side}']`);
  await expect(button).toHaveAttribute('title', `pick the selected entry (${id}) as ${side.toUpperCase()}`);
  await button.click();
  await expect(page.locator(`${PANE} .pi-cmp-pick[data-side='${side}']`)).toHaveAttribute('data-picked', id);
}

async function groupIds(page: Page, group: string): Promise<string[]> {
  return page.$$eval(`${PANE} .pi-cmp-${group} > .pi-cmp-list > .pi-cmp-item`, els =>
    els.map(e => (e as HTMLElement).dataset.source ?? '')
  );
}

async function sideIds(page: Page, side: 'a' | 'b'): Promise<string[]> {
  return page.$$eval(`${PANE} .pi-cmp-side-${side} .pi-cmp-item`, els => els.map(e => (e as HTMLElement).dataset.id ?? ''));
}

test.describe('Compare pane (Lab viewer)', () => {
  test('the seed: JWT leaf against cookie leaf, and before/after C1', async ({ page, tmpPath }) => {
    const name = piName('seed');
    const file = writeSeed(tmpPath, name);
    await openCompare(page, name);
    await pick(page, 'a', 'A3');
    await pick(page, 'b', 'A4');
    await expect(page.locator(`${PANE} .pi-cmp-both`)).toBeVisible();
    const expected = diff(file, 'A3', 'A4');
    for (const group of ['both', 'only_a', 'only_b'] as const) {
      expect(await groupIds(page, group)).toEqual(expected[group].map(r => r.source_id));
    }
    expect(await groupIds(page, 'only_b')).toEqual(['BS1', 'U2B', 'A4']);
    await expect(page.locator(`${PANE} .pi-cmp-tokens`)).toHaveText(`${expected.tokens_a} → ${expected.tokens_b}`);
    await page.screenshot(shot('lab-seed-diff-A3-A4.png'));

    await page.locator(`${PANE} .pi-cmp-mode[data-mode='branches']`).click();
    await expect(page.locator(`${PANE} .pi-cmp-fork .pi-cmp-id`)).toHaveText('A2');
    const b = branches(file, 'A3', 'A4');
    expect(b.common_ancestor).toBe('A2');
    expect(await sideIds(page, 'a')).toEqual(b.a);
    expect(await sideIds(page, 'b')).toEqual(b.b);
    await expect(page.locator(`${PANE} .pi-cmp-summary .pi-cmp-summary-text`)).toHaveText('离开的 JWT 路径已完成认证改造。');
    await page.screenshot(shot('lab-seed-branches-A3-A4.png'));
    // The read-only viewer's Go-here dialog says what it can do: move the leaf in this view only.
    await page.locator(`${PANE} .pi-cmp-goto[data-side='a']`).click();
    const dialog = page.locator(`${VIEWER} .pi-dialog`);
    await expect(dialog).toBeVisible();
    await expect(dialog).toContainText('read-only');
    await expect(dialog.getByRole('button', { name: 'Open in notebook' })).toBeVisible();
    await page.screenshot(shot('lab-seed-goto-dialog.png'));
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await page.locator(`${PANE} .pi-cmp-goto[data-side='a']`).click();
    await dialog.getByRole('button', { name: 'Move the leaf here (this view only)' }).click();
    const bar = page.locator(`${VIEWER} .pi-view-leaf-bar`);
    await expect(bar).toContainText('Leaf moved to A3 in this view only; the file is untouched');
    await bar.getByRole('button', { name: "Back to the file's leaf" }).click();
    await expect(bar).toBeHidden();

    await page.locator(`${PANE} .pi-cmp-mode[data-mode='diff']`).click();
    await pick(page, 'a', 'A6');
    await page.locator(`${PANE} .pi-cmp-leaf`).click();
    await expect(page.locator(`${PANE} .pi-cmp-pick[data-side='b']`)).toHaveAttribute('data-picked', 'C1');
    await expect(page.locator(`${PANE} .pi-cmp-replaced`)).toBeVisible();
    expect(await groupIds(page, 'both')).toEqual(['U4', 'A6']);
    const under = await page.$$eval(`${PANE} .pi-cmp-only_b .pi-cmp-item[data-source='C1'] .pi-cmp-replaced .pi-cmp-item`, els =>
      els.map(e => (e as HTMLElement).dataset.source)
    );
    expect(under).toEqual(['U1', 'A1', 'T1', 'A2', 'BS1', 'U2B', 'A4', 'U3', 'A5']);
    const search = page.locator(`${PANE} .pi-cmp-search-input`);
    await search.fill('auth.ts');
    await search.press('Enter');
    await expect(page.locator(`${PANE} .pi-cmp-search-a .pi-cmp-search-verdict`)).toContainText('1 hit in 1 message');
    await expect(page.locator(`${PANE} .pi-cmp-search-b .pi-cmp-search-verdict`)).toContainText('not in what the model sees');
    const found = py<{ in_a: boolean; in_b: boolean }>(`${OPEN}print(json.dumps(context_search(sm, 'A6', 'C1', 'auth.ts')))`, file);
    expect([found.in_a, found.in_b]).toEqual([true, false]);
    await page.screenshot(shot('lab-seed-diff-A6-C1-search.png'));

    // A node compared with itself: the pane says so.
    await pick(page, 'b', 'A6');
    await expect(page.locator(`${PANE} .pi-cmp-error`)).toHaveText(
      'A and B are the same entry (A6): pick two different entries to compare'
    );
  });

  test('a real fixture: two tips of a branching session', async ({ page, tmpPath }) => {
    test.skip(!fs.existsSync(paths.fixtures), `pi session fixtures not found at ${paths.fixtures}`);
    const name = piName('branching');
    const file = copyFixture('public-twkrash-branching.jsonl', tmpPath, name);
    const [other, leaf] = py<[string, string]>(
      `${OPEN}tips = [e['id'] for e in sm.entries if isinstance(e.get('id'), str) and not sm.get_children(e['id'])]\n` +
        `print(json.dumps([next(t for t in tips if t != sm.leaf_id), sm.leaf_id]))`,
      file
    );
    await openCompare(page, name);
    await page.locator(`${VIEWER} .pi-filter[data-mode='all']`).click();
    await expect(page.locator(`${VIEWER} .pi-position`)).toContainText('[all]');
    await waitForTexts(page, VIEWER);
    await pick(page, 'a', other);
    await page.locator(`${PANE} .pi-cmp-leaf`).click();
    await expect(page.locator(`${PANE} .pi-cmp-both`)).toBeVisible();
    const expected = diff(file, other, leaf);
    for (const group of ['both', 'only_a', 'only_b'] as const) {
      expect(await groupIds(page, group)).toEqual(expected[group].map(r => r.source_id).slice(0, 200));
    }
    await page.screenshot(shot('lab-fixture-diff.png'));
    await page.locator(`${PANE} .pi-cmp-mode[data-mode='branches']`).click();
    const b = branches(file, other, leaf);
    await expect(page.locator(`${PANE} .pi-cmp-stats`)).toBeVisible();
    expect(await sideIds(page, 'a')).toEqual(b.a.slice(0, 200));
    expect(await sideIds(page, 'b')).toEqual(b.b.slice(0, 200));
    await page.screenshot(shot('lab-fixture-branches.png'));
  });
});
