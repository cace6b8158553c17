// The context timeline strip and the composition bar in the read-only "Pi Session" viewer (real
// JupyterLab, Debian chromium), checked against pi_lab.view run in Python on the same file.
import { expect, test } from '@jupyterlab/galata';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

import { copyFixture, openFile, paths, piName, shot, VIEWER, waitForTexts } from './helpers';

const STRIP = `${VIEWER} .pi-timeline`;
const PLOT = `${STRIP} .pi-timeline-plot`;

/** `expression` of pi_lab.view evaluated in Python with `sm` opened read-only on `file`. */
function view<T>(file: string, expression: string): T {
  const code = [
    'import json, sys',
    'from pi_lab.session.readonly import session_from_bytes',
    'from pi_lab.view import context_timeline, context_composition',
    'sm = session_from_bytes(open(sys.argv[1], "rb").read(), sys.argv[1])',
    `print(json.dumps(${expression}))`
  ].join('\n');
  return JSON.parse(execFileSync(paths.python, ['-c', code, file], { encoding: 'utf-8' })) as T;
}

// The worked example of the seed explainer, section 14 (tests/helpers.py SEED_SECTION_14).
const SEED = [
  { type: 'session', version: 3, id: 'S1', timestamp: '2026-07-29T09:00:00Z', cwd: '/repo' },
  { type: 'message', id: 'U1', parentId: null, timestamp: '2026-07-29T09:00:01Z', message: { role: 'user', content: '检查认证实现', timestamp: 1 } },
  { type: 'message', id: 'A1', parentId: 'U1', timestamp: '2026-07-29T09:00:02Z', message: { role: 'assistant', content: [{ type: 'toolCall', id: 'call-1', name: 'read', arguments: { path: 'auth.ts' } }] } },
  { type: 'message', id: 'T1', parentId: 'A1', timestamp: '2026-07-29T09:00:03Z', message: { role: 'toolResult', toolCallId: 'call-1', toolName: 'read', content: [{ type: 'text', text: '...' }], isError: false } },
  { type: 'message', id: 'A2', parentId: 'T1', timestamp: '2026-07-29T09:00:04Z', message: { role: 'assistant', content: [{ type: 'text', text: '认证逻辑已定位' }] } },
  { type: 'message', id: 'U2', parentId: 'A2', timestamp: '2026-07-29T09:01:00Z', message: { role: 'user', content: '改成 JWT', timestamp: 2 } },
  { type: 'message', id: 'A3', parentId: 'U2', timestamp: '2026-07-29T09:01:01Z', message: { role: 'assistant', content: [{ type: 'text', text: 'JWT 方案已完成' }] } },
  { type: 'branch_summary', id: 'BS1', parentId: 'A2', timestamp: '2026-07-29T09:02:00Z', fromId: 'A2', summary: '离开的 JWT 路径已完成认证改造。' },
  { type: 'message', id: 'U2B', parentId: 'BS1', timestamp: '2026-07-29T09:02:01Z', message: { role: 'user', content: '改成 session cookie', timestamp: 3 } },
  { type: 'message', id: 'A4', parentId: 'U2B', timestamp: '2026-07-29T09:02:02Z', message: { role: 'assistant', content: [{ type: 'text', text: 'cookie 方案已完成' }] } },
  { type: 'message', id: 'U3', parentId: 'A4', timestamp: '2026-07-29T09:03:00Z', message: { role: 'user', content: '补充测试', timestamp: 4 } },
  { type: 'message', id: 'A5', parentId: 'U3', timestamp: '2026-07-29T09:03:01Z', message: { role: 'assistant', content: [{ type: 'text', text: '测试已补充' }] } },
  { type: 'message', id: 'U4', parentId: 'A5', timestamp: '2026-07-29T09:04:00Z', message: { role: 'user', content: '检查边界条件', timestamp: 5 } },
  { type: 'message', id: 'A6', parentId: 'U4', timestamp: '2026-07-29T09:04:01Z', message: { role: 'assistant', content: [{ type: 'text', text: '边界条件已处理' }] } },
  { type: 'compaction', id: 'C1', parentId: 'A6', timestamp: '2026-07-29T09:05:00Z', summary: '目标是完成认证改造；当前采用 session cookie；测试已补充。', firstKeptEntryId: 'U4', tokensBefore: 115000 }
];

function writeSeed(tmpPath: string, name: string): string {
  const file = path.join(paths.root, tmpPath, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, SEED.map(line => JSON.stringify(line) + '\n').join(''));
  return file;
}

const selectedRow = (page: import('@playwright/test').Page) =>
  page.locator(`${VIEWER} .pi-row.pi-selected`);

test.describe('Context timeline and composition in the Pi Session viewer', () => {
  test('the seed: strip, selection both ways, keyboard, composition filter, live appends', async ({ page, tmpPath }) => {
    const name = piName('seed');
    const file = writeSeed(tmpPath, name);
    const calls = view<{ kind: string; entry_id: string }[]>(file, 'context_timeline(sm)')
      .filter(r => r.kind === 'call').map(r => r.entry_id);
    expect(calls).toEqual(['A1', 'A2', 'A4', 'A5', 'A6']);
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    await expect(page.locator(STRIP)).toHaveAttribute('data-calls', '5');
    await expect(page.locator(`${STRIP} .pi-timeline-summary`)).toContainText('no usage recorded: estimates only');

    // tree → strip
    await page.locator(`${VIEWER} .pi-row[data-id='U3']`).click();
    await expect(page.locator(STRIP)).toHaveAttribute('data-selected-call', '2');
    await expect(page.locator(`${STRIP} .pi-timeline-caption`)).toContainText('call 3 of 5');

    // strip → tree, by keyboard: the focus stays on the strip
    const plot = page.locator(PLOT);
    await plot.focus();
    await page.keyboard.press('ArrowRight');
    await expect(plot).toHaveAttribute('aria-valuetext', /^call 4 of 5 · not measured · estimated 25 tokens · entry A5$/);
    await page.keyboard.press('Enter');
    await expect(selectedRow(page)).toHaveAttribute('data-id', 'A5');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('pi-timeline-plot'))).toBe(true);
    await page.keyboard.press('PageDown');
    await expect(plot).toHaveAttribute('aria-valuetext', /^compaction C1 · 115k tokens before → 13 after/);
    await page.screenshot(shot('lab-timeline-seed.png'));

    // composition at A2: the read tool call and its result are parts of their own
    await page.locator(`${VIEWER} .pi-row[data-id='A2']`).click();
    await page.locator(`${VIEWER} .pi-tab`, { hasText: 'What the model sees' }).click();
    const parts = view<{ part: string }[]>(file, 'context_composition(sm, "A2")').map(p => p.part);
    const legend = page.locator(`${VIEWER} .pi-composition-item`);
    await expect(legend).toHaveCount(parts.length);
    expect(await legend.evaluateAll(els => els.map(e => (e as HTMLElement).dataset.part))).toEqual(parts);
    await page.locator(`${VIEWER} .pi-composition-item[data-part='tool result: read']`).click();
    await expect(page.locator(`${VIEWER} .pi-context .pi-source`)).toHaveText(['T1']);
    await page.screenshot(shot('lab-composition-seed.png'));
    await page.keyboard.press('Enter'); // the focused part again: every message
    await expect(page.locator(`${VIEWER} .pi-context .pi-source`)).toHaveCount(4);

    // pi appends to the file while it is open: the strip follows the new leaf and its call
    const append = (entry: Record<string, unknown>) => fs.appendFileSync(file, JSON.stringify(entry) + '\n');
    append({ type: 'message', id: 'U5', parentId: 'C1', timestamp: '2026-07-29T09:06:00Z', message: { role: 'user', content: '再检查一次 🔍', timestamp: 6 } });
    append({ type: 'message', id: 'A7', parentId: 'U5', timestamp: '2026-07-29T09:06:01Z', message: { role: 'assistant', content: [{ type: 'text', text: '好的 ✅' }], stopReason: 'stop', timestamp: 7 } });
    await expect(page.locator(STRIP)).toHaveAttribute('data-leaf', 'A7', { timeout: 15_000 });
    await expect(page.locator(STRIP)).toHaveAttribute('data-calls', '6');
    await expect(page.locator(`${STRIP} .pi-timeline-summary`)).toContainText('6 model calls on this branch');
  });

  test('a real session: every call drawn, hovering reads the real row', async ({ page, tmpPath }) => {
    test.skip(!fs.existsSync(paths.fixtures), `pi session fixtures not found at ${paths.fixtures}`);
    const name = piName('before-compaction');
    const file = copyFixture('before-compaction.jsonl', tmpPath, name);
    const rows = view<{ kind: string; entry_id: string; measured: number | null }[]>(file, 'context_timeline(sm)');
    const calls = rows.filter(r => r.kind === 'call');
    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    await expect(page.locator(STRIP)).toHaveAttribute('data-calls', String(calls.length));
    const compactions = rows.filter(r => r.kind === 'compaction').length;
    await expect(page.locator(`${STRIP} .pi-timeline-summary`)).toContainText(`${compactions} compactions`);
    const box = (await page.locator(PLOT).boundingBox())!;
    const width = box.width - 46 - 10;
    const index = Math.floor(calls.length * 0.6);
    await page.mouse.move(box.x + 46 + ((index + 0.5) / calls.length) * width, box.y + 60);
    const tip = page.locator(`${STRIP} .pi-timeline-tip`);
    await expect(tip).toContainText(`call ${index + 1} of ${calls.length}`);
    await expect(tip).toContainText(`entry ${calls[index].entry_id.slice(0, 8)}`);
    await page.screenshot(shot('lab-timeline-before-compaction.png'));
  });
});
