// The one DOM helper of the Lab panels. Unlike core's `el` it leaves Lab's keyboard shortcuts
// alone on inputs and buttons: these panels sit in Lab's own chrome, not inside a notebook.

/** A new `tag` element with `className` (and `text`, set as text, never HTML) appended to `parent`. */
export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  parent: HTMLElement,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  parent.appendChild(node);
  return node;
}
