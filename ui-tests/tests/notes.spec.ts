// Notes in the read-only "Pi Session" viewer (issue 26), in a real JupyterLab (Debian chromium):
// a note added, edited, filtered and removed with the keyboard, kept in the server's notes file
// (<root>/pi-lab-notes.jsonl) while the session file stays byte-identical; a model's finding
// written by Python beforehand shows as a finding mark and a click on it selects its entry.
import { expect, test } from '@jupyterlab/galata';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

import { hex, notesFile, openFile, paths, shot, VIEWER, waitForTexts, writeFinding, writeSession } from './helpers';

const sha = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

test.describe('Notes in the Pi Session viewer', () => {
  test('add, edit, filter and remove a note with the keyboard; a finding from Python is marked', async ({ page, tmpPath }) => {
    const sid = `notes-${hex(4)}`;
    const texts = [
      'Please fix the failing test in parser.py',
      'I ran the tests and they all pass now.',
      'Did you actually run them?',
      'Yes: <img src=x onerror=alert(1)> every test passes.',
      'Then add a test for the empty input.',
      'Added test_empty_input; the suite passes.'
    ];
    const file = writeSession(path.join(paths.root, tmpPath), sid, '/work/project', texts);
    const name = path.basename(file);
    const before = sha(file);
    // A model's finding on the first reply, written as `Corpus.ask` writes its findings.
    const question = 'Did the agent claim the tests pass without running them?';
    writeFinding(sid, `${sid}-1`, 'claimed a passing run it never made', 'claim-unverified', 'test/judge-1', question);

    await openFile(page, name);
    await waitForTexts(page, VIEWER);
    const viewer = page.locator(VIEWER);
    const row = (id: string) => viewer.locator(`.pi-row[data-id='${id}']`);

    // The finding: a finding mark on its row (count in the row's name), and one under the timeline.
    await expect(row(`${sid}-1`).locator('.pi-row-note-finding')).toHaveText('◆');
    await expect(row(`${sid}-1`)).toHaveAttribute('aria-label', /1 model finding/);
    await expect(viewer.locator('.pi-note-count')).toHaveText('✎ 1 note');
    const findingMark = viewer.locator(`.pi-tl-note-finding[data-entry='${sid}-1']`);
    await expect(findingMark).toBeVisible();
    // A click on the mark selects the entry, and its pane lists the finding with its model and question.
    await row(`${sid}-4`).click();
    await expect(row(`${sid}-4`)).toHaveClass(/pi-selected/);
    await findingMark.click();
    await expect(row(`${sid}-1`)).toHaveClass(/pi-selected/);
    const section = viewer.locator('.pi-notes');
    await expect(section.locator('.pi-note-source')).toHaveText('finding · test/judge-1');
    await expect(section.locator('.pi-note-question')).toHaveText(`Q: ${question}`);
    await page.screenshot(shot('notes-lab-finding.png'));

    // Keyboard only: the tree has the focus; go down to the user's question and add a note.
    await viewer.locator('.pi-rows').focus();
    await page.keyboard.press('ArrowDown');
    await expect(row(`${sid}-2`)).toHaveClass(/pi-selected/);
    await page.keyboard.press('Shift+N');
    const editor = viewer.locator('.pi-note-editor');
    await expect(editor.locator('textarea')).toBeFocused();
    // Hostile text stays text.
    const hostile = 'asked for proof <b>bold?</b> <img src=x onerror="window.__pwned=1">';
    await page.keyboard.type(hostile);
    await page.keyboard.press('Shift+Tab');
    await expect(editor.locator('.pi-note-tag-input')).toBeFocused();
    await page.keyboard.type('follow-up');
    await page.screenshot(shot('notes-lab-editor.png'));
    await page.keyboard.press('Control+Enter');
    await expect(editor).toHaveCount(0);
    await expect(viewer.locator('.pi-rows')).toBeFocused();
    await expect(row(`${sid}-2`).locator('.pi-row-note')).toHaveText('✎');
    await expect(row(`${sid}-2`)).toHaveAttribute('aria-label', /1 note\b/);
    const mine = section.locator('.pi-note');
    await expect(mine).toHaveCount(1);
    await expect(mine.locator('.pi-note-text')).toHaveText(hostile);
    await expect(mine.locator('.pi-note-tag')).toHaveText('follow-up');
    expect(await mine.locator('img, b').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await expect(viewer.locator('.pi-note-count')).toHaveText('✎ 2 notes');
    await page.screenshot(shot('notes-lab-marks.png'));

    // alt+N and alt+shift+N go to the next and previous noted rows.
    await page.keyboard.press('Alt+N');
    await expect(row(`${sid}-1`)).toHaveClass(/pi-selected/); // wrapped round to the first
    await page.keyboard.press('Alt+N');
    await expect(row(`${sid}-2`)).toHaveClass(/pi-selected/);

    // Edit it (the button, then the keyboard in the editor).
    await section.locator('.pi-note-edit').click();
    await expect(editor.locator('textarea')).toHaveValue(hostile);
    await editor.locator('textarea').fill('asked for proof of the run');
    await editor.locator('textarea').press('Control+Enter');
    await expect(mine.locator('.pi-note-text')).toHaveText('asked for proof of the run');
    await expect(mine.locator('.pi-note-meta')).toContainText('edited');

    // The "noted" filter: the server lays out the noted entries only; then by tag.
    await viewer.locator('.pi-note-filter').selectOption('noted');
    await expect(viewer.locator('.pi-position')).toContainText('/2) [noted]');
    await expect(viewer.locator('.pi-row')).toHaveCount(2);
    await page.screenshot(shot('notes-lab-filter.png'));
    await viewer.locator('.pi-note-filter').selectOption('tag:follow-up');
    await expect(viewer.locator('.pi-row')).toHaveCount(1);
    await expect(viewer.locator('.pi-row')).toHaveAttribute('data-id', `${sid}-2`);

    // The Notes tab: every note, findings grouped by question; a click selects the entry.
    await viewer.locator('.pi-note-filter').selectOption('');
    await expect(viewer.locator('.pi-row')).toHaveCount(texts.length);
    await viewer.locator('.pi-tab-notes').click();
    const all = viewer.locator('.pi-notes-all');
    await expect(all.locator('.pi-note')).toHaveCount(2);
    await expect(all.locator('.pi-notes-findings .pi-note-question')).toHaveText(`Q: ${question}`);
    await expect(all.locator('.pi-note-entry').first()).toContainText('Did you actually run them?');
    await page.screenshot(shot('notes-lab-list.png'));
    await all.locator(`.pi-note-finding[data-entry='${sid}-1']`).click();
    await expect(row(`${sid}-1`)).toHaveClass(/pi-selected/);

    // Remove it: the button asks first.
    await row(`${sid}-2`).click();
    await viewer.locator('.pi-tab', { hasText: 'Entry' }).click();
    await section.locator('.pi-note-remove').click();
    await expect(section.locator('.pi-note-remove-yes')).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(row(`${sid}-2`).locator('.pi-row-note')).toHaveText('');
    await expect(viewer.locator('.pi-note-count')).toHaveText('✎ 1 note');

    // Another writer (Python, as `Corpus.ask` does) while the viewer is open: the next poll
    // carries the store's new version and the view asks for the notes again.
    writeFinding(sid, `${sid}-5`, 'the new test was never run', 'claim-unverified', 'test/judge-1', question);
    await expect(row(`${sid}-5`).locator('.pi-row-note-finding')).toHaveText('◆');
    await expect(viewer.locator('.pi-note-count')).toHaveText('✎ 2 notes');

    // The notes went to the notes file, never to the session.
    expect(sha(file)).toBe(before);
    const ops = fs.readFileSync(notesFile(), 'utf-8').split('\n').filter(Boolean)
      .map(line => JSON.parse(line) as { op: string; id: string; note?: { session_id: string; source: string } });
    const ids = new Set(ops.filter(op => op.note?.session_id === sid).map(op => op.id));
    expect(ops.filter(op => ids.has(op.id)).map(op => `${op.op} ${op.note?.source ?? ''}`.trim()))
      .toEqual(['add model:test/judge-1', 'add person', 'edit', 'remove', 'add model:test/judge-1']);
  });
});
