// CSS of the viewer's navigation aids: search hits marked in the rows and the entry pane, the
// hit and go-to-id controls, the note beside the count, the "laying out" state of the list and
// the bar of a leaf moved in this view only. Appended to the viewer's other styles (viewer.ts).

export const NAVIGATION_STYLES = `
.pi-lab mark.pi-hit {
  background: color-mix(in srgb, #f2c94c 55%, transparent);
  color: inherit;
  border-radius: 2px;
  padding: 0;
}
.pi-lab mark.pi-hit.pi-hit-current {
  background: #f2994a;
  outline: 1px solid var(--pi-warn);
}
.pi-lab .pi-row-why {
  flex: 0 1 auto;
  min-width: 0;
  max-width: 45%;
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
  margin-left: 6px;
  padding: 0 4px;
  border-radius: 3px;
  font-size: 11px;
  color: var(--pi-muted);
  background: var(--pi-bg2);
}
.pi-lab .pi-row-why:empty {
  display: none;
}
.pi-lab .pi-hit-nav {
  display: inline-flex;
  align-items: center;
  gap: 2px;
}
.pi-lab .pi-hit-nav[hidden] {
  display: none;
}
.pi-lab .pi-hit-count {
  font-size: 11px;
  color: var(--pi-muted);
  min-width: 4em;
  text-align: center;
}
.pi-lab .pi-goto {
  width: 11em;
  font-family: var(--pi-mono);
  font-size: 12px;
}
.pi-lab .pi-filter-note {
  font-size: 11px;
  color: var(--pi-muted);
  cursor: help;
}
.pi-lab .pi-position.pi-working {
  color: var(--pi-accent);
}
.pi-lab .pi-position.pi-working::before {
  content: '⟳ ';
}
.pi-lab.pi-laying-out .pi-rows {
  opacity: 0.55;
}
.pi-lab .pi-view-leaf-bar {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 8px;
  padding: 4px 8px;
  border-bottom: 1px solid var(--pi-border);
  background: color-mix(in srgb, var(--pi-accent) 10%, var(--pi-bg));
  font-size: 12px;
}
.pi-lab .pi-view-leaf-bar[hidden] {
  display: none;
}
.pi-lab .pi-row.pi-view-leaf {
  box-shadow: inset 3px 0 0 var(--pi-accent);
}
.pi-lab .pi-row.pi-view-leaf .pi-row-badge {
  background: var(--pi-accent);
  color: #fff;
}
.pi-lab .pi-view-only-note {
  padding: 6px 8px;
  border-left: 3px solid var(--pi-accent);
  background: var(--pi-bg2);
}
`;
