// A small Markdown renderer that builds DOM nodes directly.
//
// Session text is untrusted (model output, tool output, file contents). This renderer never
// produces HTML strings: every piece of text becomes a text node, so `<script>`, `<img
// onerror>` and friends are shown as the characters they are. Links are kept only for http,
// https and mailto URLs, open in a new tab and carry rel="noopener noreferrer".
//
// Supported: fenced code blocks, ATX headings, block quotes, bullet and numbered lists,
// horizontal rules, paragraphs; inline code, **bold**, *italic* / _italic_, [links](url).

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

function appendText(parent: Node, text: string): void {
  if (text) {
    parent.appendChild(document.createTextNode(text));
  }
}

interface InlineRule {
  re: RegExp;
  build: (m: RegExpExecArray, depth: number) => Node;
}

/** Nesting deeper than this is shown as plain text (no recursion on hostile input). */
const MAX_DEPTH = 6;

const INLINE_RULES: InlineRule[] = [
  {
    re: /`([^`\n]+)`/y,
    build: m => {
      const code = document.createElement('code');
      code.textContent = m[1];
      return code;
    }
  },
  {
    re: /\*\*(?=\S)([^\n]*?\S)\*\*/y,
    build: (m, depth) => wrapInline('strong', m[1], depth)
  },
  {
    re: /__(?=\S)([^\n]*?\S)__(?!\w)/y,
    build: (m, depth) => wrapInline('strong', m[1], depth)
  },
  {
    re: /\*(?=[^\s*])([^*\n]*?[^\s*])\*/y,
    build: (m, depth) => wrapInline('em', m[1], depth)
  },
  {
    re: /_(?=[^\s_])([^_\n]*?[^\s_])_(?!\w)/y,
    build: (m, depth) => wrapInline('em', m[1], depth)
  },
  {
    re: /\[([^\]\n]+)\]\(([^)\s]+)\)/y,
    build: (m, depth) => {
      if (!SAFE_URL.test(m[2])) {
        return document.createTextNode(m[0]);
      }
      const a = document.createElement('a');
      a.href = m[2];
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      renderInline(a, m[1], depth + 1);
      return a;
    }
  }
];

function wrapInline(tag: 'strong' | 'em', text: string, depth: number): Node {
  const node = document.createElement(tag);
  renderInline(node, text, depth + 1);
  return node;
}

/** Inline Markdown of one line (or paragraph) appended to `parent` as DOM nodes. */
export function renderInline(parent: Node, text: string, depth = 0): void {
  if (depth > MAX_DEPTH) {
    appendText(parent, text);
    return;
  }
  let plain = '';
  let i = 0;
  outer: while (i < text.length) {
    const ch = text[i];
    // Underscores inside words (snake_case, __dunder__) are not emphasis.
    const intraword = ch === '_' && i > 0 && /\w/.test(text[i - 1]);
    if (!intraword && (ch === '`' || ch === '*' || ch === '_' || ch === '[')) {
      for (const rule of INLINE_RULES) {
        rule.re.lastIndex = i;
        const m = rule.re.exec(text);
        if (m) {
          // Take the end now: building a nested node reuses these regexes (and lastIndex).
          const end = i + m[0].length;
          appendText(parent, plain);
          plain = '';
          parent.appendChild(rule.build(m, depth));
          i = end;
          continue outer;
        }
      }
    }
    plain += ch;
    i += 1;
  }
  appendText(parent, plain);
}

const FENCE = /^\s{0,3}(```|~~~)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const NUMBERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

/** Render Markdown `text` into `parent` (block structure, then inline). */
export function renderMarkdown(parent: HTMLElement, text: string, depth = 0): void {
  if (depth > MAX_DEPTH) {
    const pre = document.createElement('pre');
    pre.textContent = text;
    parent.appendChild(pre);
    return;
  }
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length) {
      const p = document.createElement('p');
      paragraph.forEach((line, n) => {
        if (n > 0) {
          p.appendChild(document.createElement('br'));
        }
        renderInline(p, line);
      });
      parent.appendChild(p);
      paragraph = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const body: string[] = [];
      i += 1;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1; // the closing fence (or the end)
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      if (fence[2]) {
        code.dataset.lang = fence[2];
      }
      code.textContent = body.join('\n');
      pre.appendChild(code);
      parent.appendChild(pre);
      continue;
    }
    if (!line.trim()) {
      flush();
      i += 1;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      const h = document.createElement(`h${Math.min(6, heading[1].length + 2)}` as 'h3');
      renderInline(h, heading[2]);
      parent.appendChild(h);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      flush();
      parent.appendChild(document.createElement('hr'));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      flush();
      const quoted: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i])) {
        quoted.push((QUOTE.exec(lines[i]) as RegExpExecArray)[1]);
        i += 1;
      }
      const q = document.createElement('blockquote');
      renderMarkdown(q, quoted.join('\n'), depth + 1);
      parent.appendChild(q);
      continue;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) {
      flush();
      const numbered = !BULLET.test(line);
      const list = document.createElement(numbered ? 'ol' : 'ul');
      if (numbered) {
        const start = Number((NUMBERED.exec(line) as RegExpExecArray)[2]);
        if (start !== 1) {
          (list as HTMLOListElement).start = start;
        }
      }
      while (i < lines.length) {
        const m = numbered ? NUMBERED.exec(lines[i]) : BULLET.exec(lines[i]);
        if (!m) {
          // A non-blank indented line continues the previous item.
          if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) {
            (list.lastChild as HTMLElement).appendChild(document.createElement('br'));
            renderInline(list.lastChild, lines[i].trim());
            i += 1;
            continue;
          }
          break;
        }
        const item = document.createElement('li');
        renderInline(item, numbered ? m[3] : m[2]);
        list.appendChild(item);
        i += 1;
      }
      parent.appendChild(list);
      continue;
    }
    paragraph.push(line);
    i += 1;
  }
  flush();
}
