// The Pi Sessions side panel: pi's sessions folder (a throw-away one under PI_CODING_AGENT_DIR),
// grouped by project, searched over the whole text with snippets, opened in the viewer.
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { engine, hex, paths, shot, shownRows, waitForTexts, writeSession } from './helpers';

const PANEL = '#pi-lab-sessions';
const OPENED = '.lm-DockPanel .jp-PiSessionDocument .pi-lab';
// The main area's current tab (the side bar has a current tab too).
const TAB = '#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current';

async function showPanel(page: import('@playwright/test').Page): Promise<void> {
  await page.evaluate(() => (window as any).jupyterapp.commands.execute('pi-lab:show-sessions'));
  await page.locator(`${PANEL} .jp-PiSessions-summary`).waitFor();
}

test.describe('Pi Sessions panel', () => {
  // galata tracks Jupyter sessions by answering every URL matching /api\/sessions/ itself, which
  // takes in pi-lab/api/sessions (the panel's listing) too: these tests open no kernel, so turn it off.
  test.use({ sessions: null });

  test('lists the sessions folder and opens a session', async ({ page }) => {
    const tag = hex();
    const project = path.join(paths.sessions, `--home-ann-proj${tag}--`);
    writeSession(project, `old${tag}`, `/home/ann/proj${tag}`, ['fix the parser', 'done'], 1);
    const newest = writeSession(project, `new${tag}`, `/home/ann/proj${tag}`, ['add a <b>cache</b>', 'added', 'thanks'], 6);
    writeSession(path.join(paths.sessions, `--srv-app${tag}--`), `app${tag}`, `/srv/app${tag}`, ['deploy the app'], 3);

    await showPanel(page);
    const panel = page.locator(PANEL);
    const group = panel.locator('.jp-PiSessions-group', {
      has: page.locator('.jp-PiSessions-project', { hasText: `/home/ann/proj${tag}` })
    });
    await expect(group.locator('.jp-PiSessions-item')).toHaveCount(2);
    const names = await group.locator('.jp-PiSessions-name').allInnerTexts();
    expect(names).toEqual(['add a <b>cache</b>', 'fix the parser']); // newest first; markup stays text
    await expect(group.locator('.jp-PiSessions-meta').first()).toContainText('3 messages');
    await page.screenshot(shot('sessions-panel.png'));

    await panel.locator('.jp-PiSessions-search').fill(`deploy app${tag}`);
    await expect(panel.locator('.jp-PiSessions-item')).toHaveCount(1);
    await expect(panel.locator('.jp-PiSessions-project')).toHaveText(`/srv/app${tag} 1`);
    await panel.locator('.jp-PiSessions-search').fill('');
    await expect(group.locator('.jp-PiSessions-item')).toHaveCount(2);

    await group.locator('.jp-PiSessions-item').first().click();
    await waitForTexts(page, OPENED);
    expect(await shownRows(page, OPENED)).toEqual(engine('rows', newest));
    // The tab and the viewer's header say what the session is; the file name is in the tooltip.
    const tab = page.locator(TAB);
    await expect(tab.locator('.lm-TabBar-tabLabel')).toHaveText('add a <b>cache</b>');
    await expect(tab).toHaveAttribute('title', new RegExp(path.basename(newest).replace(/[.]/g, '\\.')));
    await expect(page.locator(`${OPENED} .pi-title`)).toHaveText('add a <b>cache</b>');
    await expect(page.locator(`${OPENED} b`)).toHaveCount(0);
    await page.screenshot(shot('sessions-panel-opened.png'));
  });

  test('search sees the whole text, shows snippets and opens the viewer with the search', async ({ page }) => {
    test.skip(!fs.existsSync(paths.fixtures), `pi session fixtures not found at ${paths.fixtures}`);
    const tag = hex();
    const folder = path.join(paths.sessions, `--pi-mono${tag}--`);
    fs.mkdirSync(folder, { recursive: true });
    const file = path.join(folder, `2025-11-20T10-00-00-000Z_big${tag}.jsonl`);
    fs.copyFileSync(path.join(paths.fixtures, 'before-compaction.jsonl'), file);
    const title = engine<string>('title', file);

    await showPanel(page);
    const panel = page.locator(PANEL);
    await panel.locator('.jp-PiSessions-search').fill('pendingBashMessages');
    const item = panel
      .locator('.jp-PiSessions-group', { has: page.locator(`.jp-PiSessions-project[title*="--pi-mono${tag}--"]`) })
      .locator('.jp-PiSessions-item', { has: page.locator('.jp-PiSessions-hits') });
    await expect(item).toHaveCount(1);
    // Every occurrence lies past the first 64 KiB of the session's text (where search used to stop).
    await expect(item.locator('.jp-PiSessions-hits')).toHaveText('5 matching messages');
    const snippets = item.locator('.jp-PiSessions-snippet');
    await expect(snippets).toHaveCount(3);
    for (const marked of await item.locator('.jp-PiSessions-snippet mark').allInnerTexts()) {
      expect(marked.toLowerCase()).toBe('pendingbashmessages');
    }
    await expect(panel.locator('.jp-PiSessions-summary')).toContainText('full text');
    await page.screenshot(shot('sessions-panel-search.png'));

    await snippets.first().click();
    await waitForTexts(page, OPENED);
    await expect(page.locator(`${OPENED} .pi-search`)).toHaveValue('pendingBashMessages');
    const expected = engine<string[][]>('rows', file, { search: 'pendingBashMessages' });
    await expect(page.locator(`${OPENED} .pi-position`)).toContainText(`/${expected.length})`);
    expect(await shownRows(page, OPENED)).toEqual(expected);
    await expect(page.locator(`${TAB} .lm-TabBar-tabLabel`)).toHaveText(
      title.length > 60 ? new RegExp(`^${escape(title.slice(0, 40))}.*…$`) : title
    );
    await page.screenshot(shot('sessions-panel-search-opened.png'));
  });

  test('bidi controls are shown as markers and do not reverse the text', async ({ page }) => {
    const tag = hex();
    const name = `invoice \u202Etxt.exe\u202C for ${tag}`;
    writeSession(path.join(paths.sessions, `--bidi${tag}--`), `bidi${tag}`, `/home/ann/bidi${tag}`,
      ['look at \u202Edlrow olleh', 'ok'], 2, name);
    await showPanel(page);
    await page.locator(`${PANEL} .jp-PiSessions-search`).fill(tag);
    await expect(page.locator(`${PANEL} .jp-PiSessions-summary`)).toContainText('1 of');
    const item = page.locator(`${PANEL} .jp-PiSessions-item`, { hasText: tag });
    await expect(item.locator('.jp-PiSessions-name')).toHaveText(`invoice ⟨RLO⟩txt.exe⟨PDF⟩ for ${tag}`);
    await expect(item.locator('.jp-PiSessions-first')).toHaveText('look at ⟨RLO⟩dlrow olleh');
    const raw = await item.evaluate(e => /[\u202a-\u202e\u2066-\u2069]/.test(e.textContent ?? ''));
    expect(raw).toBe(false);
    await page.screenshot(shot('sessions-panel-bidi.png'));
  });

  test('the keyboard walks the list and opens a session', async ({ page }) => {
    const tag = hex();
    const folder = path.join(paths.sessions, `--keys${tag}--`);
    writeSession(folder, `k1${tag}`, `/k${tag}`, [`first keyword${tag} here`, 'reply'], 4);
    const second = writeSession(folder, `k2${tag}`, `/k${tag}`, [`second keyword${tag} there`, 'reply'], 5);
    await showPanel(page);
    const search = page.locator(`${PANEL} .jp-PiSessions-search`);
    await search.fill(`keyword${tag}`);
    await expect(page.locator(`${PANEL} .jp-PiSessions-item`)).toHaveCount(2);
    await search.focus();
    await page.keyboard.press('ArrowDown');
    const focused = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.className ?? '');
    expect(await focused()).toContain('jp-PiSessions-item'); // the newest session
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toContain('jp-PiSessions-snippet'); // its snippet
    await page.keyboard.press('Escape');
    expect(await focused()).toContain('jp-PiSessions-search');
    await page.keyboard.press('ArrowDown');
    await page.screenshot(shot('sessions-panel-keyboard.png'));
    await page.keyboard.press('Enter');
    await waitForTexts(page, OPENED);
    expect(await shownRows(page, OPENED)).toEqual(engine('rows', second, { search: `keyword${tag}` }));
    await expect(page.locator(`${OPENED} .pi-search`)).toHaveValue(`keyword${tag}`);
  });

  test('a FIFO named like a session does not block the panel', async ({ page }) => {
    const tag = hex();
    const folder = path.join(paths.sessions, `--fifo${tag}--`);
    writeSession(folder, `ok${tag}`, `/fifo${tag}`, ['still listed'], 2);
    const fifo = path.join(folder, `2026-02-02T00-00-00-000Z_pipe${tag}.jsonl`);
    require('child_process').execFileSync('mkfifo', [fifo]);
    try {
      await showPanel(page);
      const group = page.locator(`${PANEL} .jp-PiSessions-group`, { hasText: `/fifo${tag}` });
      await expect(group.locator('.jp-PiSessions-item', { hasText: 'still listed' })).toHaveCount(1);
      await expect(page.locator(`${PANEL} .jp-PiSessions-skipped`)).toContainText('not a regular file');
      await expect(page.locator(`${PANEL} .jp-PiSessions-skipped`)).toHaveAttribute('title', new RegExp(`pipe${tag}`));
      await page.locator(`${PANEL} .jp-PiSessions-search`).fill(`still listed /fifo${tag}`);
      await expect(page.locator(`${PANEL} .jp-PiSessions-item`)).toHaveCount(1);
    } finally {
      fs.rmSync(fifo);
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
