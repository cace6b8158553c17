// The timeline's point for any entry in an export (timeline_requests.timeline_at_payload):
// the model call that stands for an entry on a branch.

import { ROLE_ASSISTANT, ROLE_MASK, ViewsData } from './viewsData';

/** timeline_requests.timeline_at_payload: the call that stands for entry `id` on a branch. */
export function timelineAt(data: ViewsData, args: Record<string, unknown>): Record<string, unknown> {
  const id = args.id;
  const entry = data.require(id);
  let leafId = args.leaf_id === null || args.leaf_id === undefined || args.leaf_id === '' ? null : args.leaf_id;
  let leaf: number;
  if (leafId === null) {
    leafId = data.header.leaf_id;
    if (leafId === null) {
      return { id, on_branch: false, call_id: null };
    }
    leaf = data.index(leafId as string);
  } else {
    leaf = data.require(leafId);
  }
  const toEntry = data.path(entry);
  const toLeaf = leaf >= 0 ? data.path(leaf) : [];
  const depth = toEntry.length - 1;
  const onBranch = depth < toLeaf.length && data.flat.ids[toLeaf[depth]] === id;
  let call: string | null = null;
  if (onBranch) {
    for (let at = depth; at >= 0; at--) {
      if ((data.facts(toEntry[at]) & ROLE_MASK) === ROLE_ASSISTANT) {
        call = data.flat.ids[toEntry[at]];
        break;
      }
    }
  }
  return { id, on_branch: onBranch, call_id: call };
}
