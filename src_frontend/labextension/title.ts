// What a session is called on its tab, in the viewer's header and in the Pi Sessions panel.
// The rule itself (the session's name, else its first user message) is computed once, on the
// server (pi_lab/server/listing.py `session_title`); this module only makes it fit one line.

import { rowSafe } from '../core/dom';

/** The parts of a session that name it, as the server sends them. */
export interface TitleSource {
  title?: string | null;
  name?: string | null;
  first_message?: string | null;
}

const TAB_CHARS = 60;

/**
 * One line of text for `source`: its title (else name, else first message), line breaks shown
 * as "↵", bidi controls shown as markers (so a U+202E cannot reverse the tab), cut to `max`
 * characters with an ellipsis. `fallback` (a file name) when nothing names the session.
 */
export function sessionTitle(source: TitleSource, fallback = '', max = TAB_CHARS): string {
  const raw = source.title || source.name || source.first_message || fallback;
  const line = rowSafe(raw.replace(/[\t ]+/g, ' ').trim());
  const chars = Array.from(line); // code points: a cut never splits a surrogate pair
  return chars.length > max ? `${chars.slice(0, max - 1).join('').trimEnd()}…` : line;
}
