// "Compaction preview" for the read-only viewer: what pi's /compact would do to the current
// branch now (where it would cut, what it would summarise and keep), shown in a dialog. It is a
// dry run on the server; compacting itself needs the notebook widget.

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import type { CompactionPreview } from '../core/actions';
import { formatTokens, shortId } from '../core/dom';

function line(parent: HTMLElement, text: string, className = ''): void {
  const node = document.createElement('p');
  node.className = `jp-PiPreview-line ${className}`.trim();
  node.textContent = text;
  parent.appendChild(node);
}

/** The preview as plain text lines (each written with textContent). */
export function previewBody(p: CompactionPreview): Widget {
  const body = new Widget();
  body.addClass('jp-PiPreview');
  const node = body.node;
  if (!p.ok) {
    line(node, p.reason ?? 'Nothing to compact on this branch.');
    return body;
  }
  line(node, `Before: ${formatTokens(p.tokens_before ?? 0)} tokens (estimate).`);
  const part = (label: string, value: CompactionPreview['summarize']): void => {
    if (value && value.count) {
      line(node, `${label}: ${value.count} message${value.count === 1 ? '' : 's'} · ${formatTokens(value.tokens)} tokens`);
    }
  };
  part(p.previous_summary ? 'Summarized (with the previous summary)' : 'Summarized', p.summarize);
  if (p.is_split_turn) {
    part('Split turn, summarized separately', p.turn_prefix);
  }
  part(`Kept as is, from entry ${shortId(p.first_kept_id)}`, p.kept);
  line(node, `After: about ${formatTokens(p.estimated_after ?? 0)} tokens plus the summary ` +
    `(keeping about ${formatTokens(p.keep_recent_tokens ?? 0)} recent tokens).`);
  if (p.files && (p.files.read.length || p.files.modified.length)) {
    line(node, `Files read: ${p.files.read.length} · modified: ${p.files.modified.length}`);
  }
  line(node, 'Nothing was written. Open the session in a notebook to compact it.', 'jp-PiPreview-note');
  return body;
}

export async function showCompactionPreview(load: () => Promise<CompactionPreview>): Promise<void> {
  let body: Widget;
  try {
    body = previewBody(await load());
  } catch (error) {
    body = new Widget();
    line(body.node, error instanceof Error ? error.message : String(error));
  }
  await showDialog({ title: 'Compaction preview (dry run)', body, buttons: [Dialog.okButton({ label: 'Close' })] });
}
