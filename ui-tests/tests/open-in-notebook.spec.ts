// "Open in notebook" from the viewer gives a notebook whose cell opens the session in the widget.
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { copyFixture, engine, openFile, paths, piName, shot, shownRows, VIEWER, waitForTexts } from './helpers';

test('Open in notebook gives a working notebook', async ({ page, tmpPath }) => {
  test.skip(!fs.existsSync(paths.fixtures), `pi session fixtures not found at ${paths.fixtures}`);
  const name = piName('branching');
  const file = copyFixture('public-twkrash-branching.jsonl', tmpPath, name);
  await openFile(page, name);
  await waitForTexts(page, VIEWER);
  await page.locator('.jp-PiSessionDocument .jp-PiSessionView-openNotebook').click();
  const notebookName = name.replace('.jsonl', '.ipynb');
  await expect(page.locator('.lm-TabBar-tab.lm-mod-current', { hasText: notebookName })).toBeVisible();
  expect(fs.statSync(path.join(paths.root, tmpPath, notebookName)).isFile()).toBe(true);
  await page.waitForFunction(
    () => (window as any).jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'
  );
  await page.evaluate(() => {
    void (window as any).jupyterapp.commands.execute('notebook:run-all-cells');
  });
  const stderr = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']";
  await page.locator(`.jp-NotebookPanel .pi-lab .pi-row, ${stderr}`).first().waitFor({ timeout: 60_000 });
  const errors = page.locator(stderr);
  expect(await errors.count(), (await errors.allInnerTexts()).join('\n')).toBe(0);
  await waitForTexts(page, '.jp-NotebookPanel .pi-lab');
  const ids = (await shownRows(page, '.jp-NotebookPanel .pi-lab')).map(row => row[0]);
  expect(ids).toEqual(engine<string[][]>('rows', file).map(row => row[0]));
  await page.screenshot(shot('viewer-open-in-notebook.png'));
});
