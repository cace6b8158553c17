// anywidget front end for pi_lab's notebook widget.
//
// esbuild bundles this file to pi_lab/static/widget.js, which the Python widget loads as `_esm`.
// For now it draws only a header (session title and entry count). The framework-free viewer in
// src_frontend/core/ will be mounted below that header once it exists.
//
// Rule for everything drawn here: text from a session goes in through `textContent` only, never
// through innerHTML, because session files hold arbitrary model output.

import type { AnyModel, RenderProps } from '@anywidget/types';

/** The synced traitlets this view reads. */
export interface IPiWidgetModel {
  title: string;
  entry_count: number;
}

/** "1 entry", "2 entries", "0 entries". Non-numbers (a trait not yet synced) count as 0. */
export function formatEntryCount(count: unknown): string {
  const n = typeof count === 'number' && Number.isFinite(count) ? Math.max(0, Math.trunc(count)) : 0;
  return `${n} ${n === 1 ? 'entry' : 'entries'}`;
}

function make<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  parent: HTMLElement
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent.appendChild(node);
  return node;
}

function render({ model, el }: RenderProps<IPiWidgetModel>): () => void {
  const root = make('div', 'pi-lab-widget', el);
  const header = make('div', 'pi-lab-header', root);
  header.style.display = 'flex';
  header.style.gap = '0.75em';
  header.style.alignItems = 'baseline';
  const title = make('span', 'pi-lab-title', header);
  title.style.fontWeight = 'bold';
  const count = make('span', 'pi-lab-entry-count', header);
  count.style.opacity = '0.75';

  const showTitle = (): void => {
    const value = model.get('title');
    title.textContent = typeof value === 'string' && value !== '' ? value : 'pi session';
  };
  const showCount = (): void => {
    count.textContent = formatEntryCount(model.get('entry_count'));
  };
  showTitle();
  showCount();
  model.on('change:title', showTitle);
  model.on('change:entry_count', showCount);

  return () => {
    (model as AnyModel<IPiWidgetModel>).off('change:title', showTitle);
    model.off('change:entry_count', showCount);
    root.remove();
  };
}

export default { render };
