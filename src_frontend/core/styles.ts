// The viewer's CSS, injected once per viewer. Colours come from JupyterLab's theme variables
// (with fallbacks outside JupyterLab), so light and dark themes both work.

export const STYLES = `
.pi-lab {
  --pi-fg: var(--jp-ui-font-color1, #1f2328);
  --pi-muted: var(--jp-ui-font-color2, #6e7781);
  --pi-bg: var(--jp-layout-color1, #ffffff);
  --pi-bg2: var(--jp-layout-color2, #f3f4f6);
  --pi-border: var(--jp-border-color2, #d8dee4);
  --pi-accent: var(--jp-brand-color1, #1f6feb);
  --pi-select: color-mix(in srgb, var(--jp-brand-color1, #1f6feb) 24%, transparent);
  --pi-good: var(--jp-success-color1, #1a7f37);
  --pi-warn: var(--jp-warn-color1, #b35900);
  --pi-bad: var(--jp-error-color1, #cf222e);
  --pi-mono: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace);
  --pi-measured: #2f6fb3;
  --pi-estimated: #8fb3d9;
  position: relative;
  display: flex;
  flex-direction: column;
  box-sizing: border-box;
  min-height: 320px;
  border: 1px solid var(--pi-border);
  border-radius: 4px;
  background: var(--pi-bg);
  color: var(--pi-fg);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: 13px;
  overflow: hidden;
  container-type: inline-size;
}
.pi-lab * { box-sizing: border-box; }
/* Session text in an inline element cannot reorder the text around it: a bidi control inside
   (U+202E and friends) acts only within its own element. Rows show such controls as markers. */
.pi-lab span, .pi-lab code, .pi-lab a, .pi-lab strong, .pi-lab em, .pi-lab bdi, .pi-lab summary, .pi-lab td { unicode-bidi: isolate; }
.pi-detail-label { color: var(--pi-warn); white-space: pre-wrap; overflow-wrap: anywhere; }
/* A part the viewer hides stays hidden even when its own rule sets a display. */
.pi-lab [hidden] { display: none !important; }
/* Narrow views (two widgets side by side, a side panel): the entry pane goes under the tree. */
@container (max-width: 760px) {
  .pi-main { flex-direction: column; }
  .pi-rows { flex: 0 0 65%; }
  .pi-side { flex: 1 1 0; border-left: none; border-top: 1px solid var(--pi-border); }
  .pi-title { max-width: 60%; }
  .pi-status { display: none; }
  /* Compact chrome, so the tree keeps the height (issue 22, checked at half width by
     tests/browser/test_layout.py): one header line, a tighter gauge and toolbar. The timeline
     starts folded there (timeline.ts). */
  .pi-header { align-items: center; gap: 8px; padding: 4px 8px; }
  .pi-meta { flex: 1 1 auto; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .pi-gauge { padding: 4px 8px 3px; }
  .pi-gauge-caption { gap: 2px 8px; margin-top: 3px; font-size: 11px; }
  .pi-toolbar { gap: 4px 6px; padding: 3px 8px; }
  .pi-search { flex: 1 1 100px; min-width: 90px; }
  /* the row count beside the filters, not on a line of its own */
  .pi-filters { order: -2; }
  .pi-position { order: -1; }
  .pi-timeline { padding: 1px 8px 2px; }
}
.pi-header { display: flex; gap: 10px; align-items: baseline; padding: 6px 10px; border-bottom: 1px solid var(--pi-border); }
.pi-title { font-weight: 600; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 40%; }
.pi-meta, .pi-muted { color: var(--pi-muted); }
.pi-status { margin-left: auto; color: var(--pi-muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 40%; }
.pi-busy { color: var(--pi-warn); font-weight: 600; }
.pi-access { display: inline-flex; gap: 6px; align-items: baseline; white-space: nowrap; }
.pi-readonly-badge { font-size: 11px; padding: 0 6px; border-radius: 8px; border: 1px solid var(--pi-warn); color: var(--pi-warn); }
.pi-readonly-note { border-left: 3px solid var(--pi-warn); padding: 2px 8px; }
.pi-readonly-note p { margin: 2px 0 6px; }
.pi-write-plan { margin: 0; padding: 4px 8px; border-left: 3px solid var(--pi-accent); background: var(--pi-bg2);
  font-family: var(--pi-mono); font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.pi-btn { font: inherit; font-size: 12px; padding: 2px 8px; border: 1px solid var(--pi-border); border-radius: 3px;
  background: var(--pi-bg); color: var(--pi-fg); cursor: pointer; }
.pi-btn:hover { background: var(--pi-bg2); }
.pi-btn:disabled { opacity: .5; cursor: default; }
/* Keyboard users see where they are, also on a filled (primary) button. */
.pi-lab .pi-btn:focus-visible, .pi-lab .pi-input:focus-visible, .pi-lab .pi-textarea:focus-visible, .pi-lab .pi-search:focus-visible,
.pi-lab summary:focus-visible { outline: 2px solid var(--pi-accent); outline-offset: 2px; }
.pi-btn.pi-on { background: var(--pi-accent); border-color: var(--pi-accent); color: #fff; }
.pi-btn.pi-primary { background: var(--pi-accent); border-color: var(--pi-accent); color: #fff; }
.pi-small { padding: 0 6px; font-size: 11px; }
.pi-link { color: var(--pi-accent); cursor: pointer; }
.pi-link:hover { text-decoration: underline; }
.pi-good { color: var(--pi-good); }
.pi-warn { color: var(--pi-warn); }
.pi-num { font-variant-numeric: tabular-nums; }

/* gauge */
.pi-gauge { padding: 6px 10px 4px; border-bottom: 1px solid var(--pi-border); }
.pi-gauge-bar { position: relative; display: flex; height: 12px; border-radius: 2px; background: var(--pi-bg2);
  overflow: visible; border: 1px solid var(--pi-border); }
.pi-gauge-measured { height: 100%; background: var(--pi-measured); }
.pi-gauge-estimated { height: 100%; background: repeating-linear-gradient(135deg, var(--pi-estimated) 0 3px,
  transparent 3px 6px); border-left: 1px solid var(--pi-measured); box-shadow: inset 0 0 0 1px var(--pi-estimated); }
.pi-gauge-unknown .pi-gauge-bar { background: repeating-linear-gradient(45deg, var(--pi-bg2) 0 6px, var(--pi-border) 6px 8px); }
.pi-gauge-unknown .pi-gauge-estimated { opacity: .6; }
.pi-gauge-threshold { position: absolute; top: -4px; bottom: -4px; width: 2px; margin-left: -1px; background: var(--pi-bad); }
.pi-gauge-keep { position: absolute; bottom: -5px; height: 3px; border-bottom: 2px dashed var(--pi-good); }
.pi-gauge-over .pi-gauge-measured { background: var(--pi-bad); }
.pi-gauge-caption { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 5px; font-size: 12px; }
.pi-gauge-value { font-weight: 600; }
.pi-unknown { color: var(--pi-warn); }
.pi-measured { color: var(--pi-measured); }
.pi-estimated { color: var(--pi-muted); font-style: italic; }
.pi-gauge-headroom { color: var(--pi-fg); }
.pi-gauge-count { margin-left: auto; color: var(--pi-muted); }

/* context timeline strip (timeline.ts) */
.pi-lab { --pi-tl-estimated: #5b84b1; --pi-tl-compaction: #1a9c9c; --pi-tl-branch: #b7791f; }
.pi-timeline { border-bottom: 1px solid var(--pi-border); padding: 2px 10px 4px; flex: none; }
.pi-timeline-head { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: center; font-size: 12px; }
.pi-timeline-toggle { border: none; padding: 0 4px; font-weight: 600; white-space: nowrap; flex: none; }
.pi-timeline-above { color: var(--pi-bad); font-size: 11px; }
.pi-timeline-above:empty { display: none; }
.pi-timeline-legend { margin-left: auto; display: flex; flex-wrap: wrap; gap: 8px; font-size: 11px; color: var(--pi-muted); }
.pi-tl-key::before { content: ''; display: inline-block; width: 14px; height: 0; vertical-align: middle; margin-right: 3px;
  border-top: 2px solid currentColor; }
.pi-tl-key-measured::before { color: var(--pi-measured); }
.pi-tl-key-estimated::before { color: var(--pi-tl-estimated); border-top-style: dashed; }
.pi-tl-key-threshold::before { color: var(--pi-bad); border-top-width: 1px; }
.pi-tl-key-keep::before { color: var(--pi-good); border-top: 1px dotted; }
.pi-tl-key-compaction::before { color: var(--pi-tl-compaction); width: 0; height: 10px; border-top: none; border-left: 1px solid; }
.pi-tl-key-branch::before { width: 0; height: 0; border: 4px solid transparent; border-bottom: 7px solid var(--pi-tl-branch);
  border-top: none; }
.pi-tl-key-overflow::before { content: '×'; width: auto; border: none; color: var(--pi-bad); font-weight: 700; }
.pi-lab { --pi-tl-whatif: #8250df; }
.pi-tl-key-whatif, .pi-tl-key-whatif-compaction { display: none; }
.pi-timeline-whatif-on .pi-tl-key-whatif, .pi-timeline-whatif-on .pi-tl-key-whatif-compaction { display: inline; color: var(--pi-tl-whatif); }
.pi-tl-key-whatif::before { color: var(--pi-tl-whatif); border-top-width: 2px; }
.pi-tl-key-whatif-compaction::before { content: '◆'; width: auto; border: none; color: var(--pi-tl-whatif); }
.pi-whatif-toggle { border: 1px solid var(--pi-border); padding: 0 6px; white-space: nowrap; flex: none; }
.pi-whatif-toggle.pi-active { border-color: var(--pi-tl-whatif); color: var(--pi-tl-whatif); }
/* The panel lives in the timeline, which does not grow: its long parts scroll within it. */
.pi-whatif { border-top: 1px dashed var(--pi-tl-whatif); margin-top: 4px; padding-top: 4px; font-size: 12px; max-height: 45vh; overflow: auto; }
.pi-whatif-form { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: center; }
.pi-whatif-title { font-weight: 600; color: var(--pi-tl-whatif); }
.pi-whatif-field { display: inline-flex; gap: 4px; align-items: center; }
.pi-whatif-input { width: 8em; font: inherit; padding: 1px 4px; border: 1px solid var(--pi-border); border-radius: 3px; background: var(--pi-bg); color: var(--pi-fg); }
.pi-whatif-status { margin: 4px 0; }
.pi-whatif-bad { color: var(--pi-bad); }
.pi-whatif-list { display: flex; flex-wrap: wrap; gap: 3px 6px; align-items: center; }
.pi-whatif-marker { color: var(--pi-tl-whatif); border: 1px solid var(--pi-border); padding: 0 5px; }
.pi-whatif-marker.pi-whatif-same { font-style: italic; }
.pi-whatif-marker.pi-active { border-color: var(--pi-tl-whatif); background: var(--pi-bg2); }
.pi-whatif-detail { margin-top: 6px; padding: 4px 6px; border-left: 3px solid var(--pi-tl-whatif); background: var(--pi-bg2); }
.pi-whatif-detail h5 { margin: 6px 0 2px; font-size: 12px; }
.pi-whatif-split { display: flex; gap: 12px; }
.pi-whatif-side { flex: 1 1 0; min-width: 0; }
.pi-whatif-entries { margin: 0; padding-left: 0; list-style: none; max-height: 140px; overflow: auto; }
.pi-whatif-entries li { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pi-whatif-summary { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 160px; overflow: auto; margin: 0; font-family: var(--pi-mono); font-size: 11px; }
.pi-whatif-same-note { margin: 4px 0; color: var(--pi-good); }
.pi-whatif-compare { display: flex; gap: 12px; margin-top: 6px; }
.pi-whatif-column { flex: 1 1 0; min-width: 0; max-height: 260px; overflow: auto; }
.pi-whatif-hypothetical .pi-pane-title { color: var(--pi-tl-whatif); }
.pi-timeline-plot { position: relative; height: 96px; margin-top: 2px; outline: none; cursor: crosshair; border-radius: 3px; }
.pi-timeline-plot:focus-visible { box-shadow: 0 0 0 2px var(--pi-accent); }
.pi-timeline-canvas { position: absolute; left: 0; top: 0; display: block; }
.pi-timeline-tip { position: absolute; top: 100%; z-index: 5; max-width: 320px; padding: 3px 6px; font-size: 11px; pointer-events: none;
  background: var(--pi-bg); color: var(--pi-fg); border: 1px solid var(--pi-border); border-radius: 3px;
  box-shadow: 0 2px 8px rgba(0, 0, 0, .15); white-space: normal; overflow-wrap: anywhere; }
.pi-timeline-caption { font-size: 11px; color: var(--pi-muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  min-height: 1.3em; }
.pi-timeline-message { margin: 4px 0; font-size: 12px; }
/* Folded (by the user, or by a narrow layout): one thin line, the toggle and what the strip holds. */
.pi-timeline.pi-timeline-collapsed { padding-bottom: 2px; }
.pi-timeline-collapsed .pi-timeline-legend, .pi-timeline-collapsed .pi-timeline-above { display: none; }
.pi-timeline-compact .pi-timeline-summary { flex: 1 1 0; min-width: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pi-timeline-compact .pi-timeline-legend { flex-basis: 100%; margin-left: 0; gap: 2px 8px; }
.pi-timeline-off-branch .pi-timeline-caption { color: var(--pi-warn); }

/* composition bar ("what the model sees", composition.ts) */
.pi-composition { margin: 4px 0 8px; }
.pi-composition-head { display: flex; gap: 8px; align-items: baseline; font-size: 12px; }
.pi-composition-title { font-weight: 600; }
.pi-composition-bar { display: flex; height: 14px; margin: 4px 0; border-radius: 2px; overflow: hidden; border: 1px solid var(--pi-border); }
.pi-composition-segment { flex: 0 1 0; min-width: 2px; padding: 0; border: none; border-right: 1px solid var(--pi-bg); cursor: pointer; }
.pi-composition-segment:last-child { border-right: none; }
.pi-composition-bar:has(.pi-on) .pi-composition-segment:not(.pi-on) { opacity: .35; }
.pi-composition-legend { display: flex; flex-wrap: wrap; gap: 4px; }
.pi-composition-item { display: inline-flex; gap: 5px; align-items: center; padding: 1px 6px; font-size: 11px; }
.pi-composition-item.pi-on { color: #fff; }
.pi-composition-item.pi-on .pi-muted { color: #fff; }
.pi-composition-swatch { width: 9px; height: 9px; border-radius: 2px; flex: none; }
.pi-composition-name { unicode-bidi: isolate; }
.pi-composition-filter { display: flex; gap: 8px; align-items: center; font-size: 12px; margin: 0 0 6px; padding: 2px 6px;
  border-left: 3px solid var(--pi-accent); background: var(--pi-bg2); }

/* toolbar */
.pi-toolbar { display: flex; gap: 8px; align-items: center; padding: 5px 10px; border-bottom: 1px solid var(--pi-border); flex-wrap: wrap; }
.pi-filters { display: flex; }
.pi-filters .pi-btn { border-radius: 0; margin-left: -1px; }
.pi-filters .pi-btn:first-child { border-radius: 3px 0 0 3px; margin-left: 0; }
.pi-filters .pi-btn:last-child { border-radius: 0 3px 3px 0; }
.pi-search, .pi-input, .pi-textarea { font: inherit; font-size: 12px; padding: 2px 6px; border: 1px solid var(--pi-border);
  border-radius: 3px; background: var(--pi-bg); color: var(--pi-fg); }
.pi-search { flex: 1 1 160px; min-width: 120px; }
.pi-position { color: var(--pi-muted); font-family: var(--pi-mono); font-size: 12px; }
.pi-banner { padding: 5px 10px; background: rgba(191, 135, 0, .16); color: var(--pi-fg); border-bottom: 1px solid var(--pi-border); }
.pi-banner.pi-banner-error { background: rgba(207, 34, 46, .16); color: var(--pi-fg); }
.pi-editor-text { padding: 5px 10px; border-bottom: 1px solid var(--pi-border); display: flex; gap: 8px; align-items: center; }
.pi-editor-value { font-family: var(--pi-mono); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }

/* tree */
.pi-main { flex: 1 1 auto; display: flex; min-height: 0; }
/* No text selection in the tree: a double-click acts on the row (the entry pane copies text). */
.pi-rows { flex: 1 1 58%; min-height: 0; overflow: auto; position: relative; outline: none; font-family: var(--pi-mono); font-size: 12px;
  user-select: none;
  contain: strict; /* row changes never lay out the page around the viewer */ }
.pi-rows:focus-visible { box-shadow: inset 0 0 0 2px var(--pi-select); }
.pi-rows-spacer { position: relative; min-width: 100%; }
.pi-rows-window { position: absolute; left: 0; right: 0; top: 0; will-change: transform; }
.pi-row { display: flex; align-items: center; height: 22px; line-height: 22px; padding-right: 6px; white-space: pre;
  cursor: default; border-left: 3px solid transparent; }
.pi-row:hover { background: var(--pi-bg2); }
.pi-row.pi-selected { background: var(--pi-select); }
.pi-row > span { flex: none; }
.pi-row-cursor { width: 1.4ch; color: var(--pi-accent); font-weight: 700; text-align: center; }
.pi-row-depth { color: var(--pi-warn); font-size: 10px; padding-right: 2px; }
.pi-row-prefix { color: var(--pi-muted); }
.pi-row-marker { color: var(--pi-good); font-weight: 700; }
.pi-row-glyph { width: 2ch; text-align: center; color: var(--pi-muted); }
.pi-row-label { color: var(--pi-warn); padding-right: 1ch; max-width: 45%; overflow: hidden; text-overflow: ellipsis; }
.pi-row-text.pi-row-text, .pi-row > .pi-row-text { flex: 1 1 auto; min-width: 4ch; overflow: hidden; text-overflow: ellipsis; }
.pi-row-badge { font-family: var(--jp-ui-font-family, sans-serif); font-size: 10px; padding: 0 4px; border-radius: 6px; margin-left: 4px; }
.pi-row-badge:empty { display: none; }
.pi-row-tokens { color: var(--pi-muted); font-size: 11px; min-width: 5ch; text-align: right; margin-left: 4px; }
.pi-row-menu { visibility: hidden; cursor: pointer; padding: 0 4px; color: var(--pi-accent); }
.pi-row:hover .pi-row-menu, .pi-row.pi-selected .pi-row-menu { visibility: visible; }
.pi-kind-user .pi-row-text { color: var(--pi-accent); }
.pi-kind-user .pi-row-glyph { color: var(--pi-accent); }
.pi-kind-tool_result .pi-row-text, .pi-kind-tool_call .pi-row-text { color: var(--pi-muted); }
.pi-kind-thinking .pi-row-text { color: #8957e5; font-style: italic; }
.pi-kind-branch_summary .pi-row-text, .pi-kind-branch_summary .pi-row-glyph { color: #b7791f; }
.pi-kind-compaction { background: rgba(9, 105, 218, .07); }
.pi-kind-compaction .pi-row-text, .pi-kind-compaction .pi-row-glyph { color: #1a9c9c; font-weight: 600; }
.pi-kind-custom_message .pi-row-text { color: #bf3989; }
.pi-kind-bash .pi-row-text { color: #a0622d; }
.pi-kind-system .pi-row-text { color: var(--pi-fg); font-weight: 600; }
.pi-kind-model_change .pi-row-text, .pi-kind-thinking_change .pi-row-text, .pi-kind-label .pi-row-text,
.pi-kind-session_info .pi-row-text, .pi-kind-custom .pi-row-text, .pi-kind-usage .pi-row-text,
.pi-kind-context_edit .pi-row-text { color: var(--pi-muted); font-size: 11px; }
.pi-kind-assistant_error .pi-row-text, .pi-row.pi-error .pi-row-text { color: var(--pi-bad); }
.pi-row.pi-out .pi-row-text, .pi-row.pi-out .pi-row-glyph { opacity: .45; }
.pi-row.pi-out .pi-row-text { font-style: italic; }
.pi-row.pi-first-kept { border-left-color: #1a9c9c; }
.pi-row.pi-first-kept .pi-row-badge { background: #137c7c; color: #fff; }
.pi-row.pi-omitted .pi-row-text { text-decoration: line-through; opacity: .6; }
.pi-row.pi-omitted .pi-row-badge { background: var(--pi-muted); color: #fff; }
.pi-row.pi-leaf .pi-row-badge { background: var(--pi-good); color: #fff; }
.pi-row.pi-pv-summarize { background: rgba(191, 135, 0, .16); }
.pi-row.pi-pv-prefix { background: rgba(130, 80, 223, .14); }
.pi-row.pi-pv-kept { background: rgba(26, 127, 55, .12); }

/* side pane */
.pi-side { flex: 1 1 42%; display: flex; flex-direction: column; min-width: 0; min-height: 0; border-left: 1px solid var(--pi-border); }
.pi-tabs { display: flex; border-bottom: 1px solid var(--pi-border); }
.pi-tab { border: none; border-radius: 0; border-bottom: 2px solid transparent; background: none; padding: 5px 10px; }
.pi-tab.pi-on { background: none; color: var(--pi-accent); border-bottom-color: var(--pi-accent); }
.pi-pane { flex: 1 1 auto; overflow: auto; padding: 8px 10px; contain: content; }
.pi-pane-title { margin: 4px 0 6px; font-size: 13px; }
.pi-detail-head { display: flex; gap: 8px; align-items: baseline; }
.pi-detail-id { font-family: var(--pi-mono); color: var(--pi-muted); }
.pi-kind-tag { font-size: 11px; padding: 1px 6px; border-radius: 8px; background: var(--pi-bg2); }
.pi-detail-facts, .pi-detail-links { display: flex; flex-wrap: wrap; gap: 4px 12px; margin: 4px 0; font-size: 12px; }
.pi-detail-body { margin-top: 6px; }
.pi-md { line-height: 1.45; overflow-wrap: anywhere; }
.pi-md p { margin: 0 0 6px; }
.pi-md pre, .pi-pre { font-family: var(--pi-mono); font-size: 12px; background: var(--pi-bg2); padding: 6px 8px; border-radius: 3px;
  white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; max-height: 420px; overflow: auto; }
.pi-md code { font-family: var(--pi-mono); background: var(--pi-bg2); padding: 0 3px; border-radius: 3px; }
.pi-md blockquote { margin: 4px 0; padding-left: 8px; border-left: 3px solid var(--pi-border); color: var(--pi-muted); }
.pi-thinking summary, .pi-raw summary, .pi-usage-box summary { cursor: pointer; color: var(--pi-muted); }
.pi-thinking pre { color: #8957e5; }
.pi-toolcall { border-left: 3px solid var(--pi-border); padding-left: 6px; margin: 6px 0; }
.pi-toolcall-name { font-family: var(--pi-mono); font-weight: 600; }
.pi-toolresult { border-left: 3px solid var(--pi-good); padding-left: 6px; margin: 6px 0; }
.pi-toolresult.pi-error { border-left-color: var(--pi-bad); }
.pi-toolresult-head { display: flex; gap: 8px; align-items: center; justify-content: space-between; color: var(--pi-muted); }
.pi-segmented .pi-btn { margin-left: 2px; }
.pi-error-box { padding: 5px 8px; border-radius: 3px; background: rgba(207, 34, 46, .16); color: var(--pi-fg); border-left: 3px solid var(--pi-bad); margin: 6px 0; white-space: pre-wrap; }
.pi-usage, .pi-compactions { border-collapse: collapse; font-size: 12px; margin: 4px 0; }
.pi-usage th, .pi-usage td, .pi-compactions th, .pi-compactions td { padding: 1px 8px 1px 0; text-align: left; vertical-align: top; }
.pi-compactions td.pi-preview { color: var(--pi-muted); max-width: 280px; }
.pi-settings { display: flex; flex-wrap: wrap; gap: 8px; }
/* Wide enough for a 7-digit window next to the number field's spin buttons. */
.pi-setting input { width: 14ch; min-width: 14ch; font-variant-numeric: tabular-nums; }
.pi-compaction-summary { margin: 4px 0; border-left: 3px solid #1a9c9c; padding-left: 6px; }
.pi-compaction-summary summary { cursor: pointer; color: var(--pi-muted); font-size: 12px; }
.pi-context { list-style: none; padding: 0; margin: 0; }
.pi-context-item { padding: 3px 0; border-bottom: 1px solid var(--pi-bg2); }
.pi-context-item.pi-omitted { opacity: .55; text-decoration: line-through; }
.pi-context-head { display: flex; gap: 8px; align-items: center; font-size: 12px; }
.pi-role { font-size: 11px; padding: 0 6px; border-radius: 8px; background: var(--pi-bg2); white-space: nowrap; }
.pi-role.pi-role-user { background: rgba(31, 111, 235, .18); }
.pi-role.pi-role-assistant { background: rgba(110, 119, 129, .18); }
.pi-role.pi-role-compactionSummary { background: rgba(26, 156, 156, .22); }
.pi-role.pi-role-branchSummary { background: rgba(183, 121, 31, .22); }
.pi-role.pi-role-toolResult { background: rgba(26, 127, 55, .18); }
.pi-role.pi-role-system { background: rgba(137, 87, 229, .2); }
.pi-context-bar { flex: 0 0 80px; height: 6px; background: var(--pi-bg2); border-radius: 3px; overflow: hidden; }
.pi-context-fill { display: block; height: 100%; background: var(--pi-estimated); }
.pi-source { margin-left: auto; font-family: var(--pi-mono); font-size: 11px; }
.pi-context-preview { font-size: 12px; color: var(--pi-fg); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
/* A selected user message: the line under the title, and the message itself at the end of its context. */
.pi-context-sent { margin: 0 0 6px; }
.pi-context-item.pi-context-sent-item { border-left: 3px solid var(--pi-accent); padding-left: 6px; background: var(--pi-bg2); }
.pi-small-text { font-size: 11px; }

/* live strip and dialogs */
.pi-live { font-family: var(--pi-mono); font-size: 12px; white-space: pre-wrap; max-height: 6em; overflow: auto;
  padding: 4px 10px; border-top: 1px solid var(--pi-border); background: var(--pi-bg2); }
.pi-dialog-layer { position: absolute; inset: 0; background: rgba(0, 0, 0, .25); display: flex; align-items: flex-start;
  justify-content: center; padding-top: 40px; z-index: 10; }
.pi-dialog-layer[hidden] { display: none; }
.pi-dialog { background: var(--pi-bg); color: var(--pi-fg); border: 1px solid var(--pi-border); border-radius: 6px;
  box-shadow: 0 6px 24px rgba(0, 0, 0, .2); width: min(600px, 92%); max-height: calc(100% - 60px); display: flex; flex-direction: column; }
.pi-dialog-head { display: flex; align-items: center; padding: 6px 10px; border-bottom: 1px solid var(--pi-border); }
.pi-dialog-title { font-weight: 600; flex: 1; }
.pi-close { border: none; font-size: 16px; line-height: 1; }
.pi-dialog-body { padding: 8px 10px; overflow: auto; display: flex; flex-direction: column; gap: 6px; }
.pi-dialog-target { font-family: var(--pi-mono); font-size: 12px; background: var(--pi-bg2); padding: 4px 6px; border-radius: 3px;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pi-menu { display: flex; flex-direction: column; gap: 4px; }
.pi-menu-item { text-align: left; padding: 4px 8px; }
.pi-choices { display: flex; gap: 6px; flex-wrap: wrap; }
.pi-textarea { min-height: 4em; resize: vertical; }
.pi-progress { color: var(--pi-warn); }
.pi-preview-part { border-left: 3px solid var(--pi-border); padding-left: 6px; }
.pi-part-summarize { border-left-color: #bf8700; }
.pi-part-prefix { border-left-color: #8250df; }
.pi-part-kept { border-left-color: var(--pi-good); }
.pi-preview-head { display: flex; justify-content: space-between; font-weight: 600; font-size: 12px; }
.pi-preview-list { list-style: none; padding: 0; margin: 2px 0; font-size: 12px; }
.pi-preview-list li { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
/* Notes (notes.ts): the reader's notes in amber, a model's findings in violet. */
.pi-lab { --pi-note: #b7791f; --pi-finding: #8250df; }
.pi-row-note { color: var(--pi-note); padding-right: 0.6ch; font-weight: 600; }
.pi-row-note:empty { display: none; }
.pi-row-note-finding { color: var(--pi-finding); }
.pi-note-filter-box { display: inline-flex; align-items: center; gap: 4px; font-size: 12px; }
.pi-note-filter { font: inherit; font-size: 12px; padding: 1px 2px; border: 1px solid var(--pi-border); border-radius: 3px;
  background: var(--pi-bg); color: var(--pi-fg); max-width: 14em; }
.pi-note-filter.pi-on { border-color: var(--pi-note); box-shadow: inset 0 0 0 1px var(--pi-note); }
.pi-lab .pi-note-filter:focus-visible { outline: 2px solid var(--pi-accent); outline-offset: 1px; }
.pi-notes { margin: 6px 0 8px; padding: 4px 8px 6px; border-left: 3px solid var(--pi-note); background: var(--pi-bg2); border-radius: 3px; }
.pi-notes-head { display: flex; align-items: center; gap: 8px; }
.pi-notes-title { font-weight: 600; font-size: 12px; }
.pi-note { padding: 4px 0; border-top: 1px solid var(--pi-border); }
.pi-note:first-child { border-top: none; }
.pi-note-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px; font-size: 11px; }
.pi-note-tag { padding: 0 6px; border-radius: 8px; border: 1px solid var(--pi-note); color: var(--pi-note); max-width: 20em;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.pi-note-finding .pi-note-tag { border-color: var(--pi-finding); color: var(--pi-finding); }
.pi-note-source { color: var(--pi-finding); font-weight: 600; }
.pi-note-question { font-size: 12px; font-style: italic; color: var(--pi-muted); white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: isolate; }
.pi-note-text { white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: isolate; margin-top: 2px; }
.pi-note-actions { display: flex; gap: 6px; align-items: baseline; margin-top: 3px; }
.pi-note-editor { display: flex; flex-direction: column; gap: 4px; margin-top: 6px; }
.pi-note-field { display: flex; gap: 6px; align-items: flex-start; }
.pi-note-field label { min-width: 3em; font-size: 12px; color: var(--pi-muted); padding-top: 3px; }
.pi-note-field .pi-input { flex: 1 1 auto; }
.pi-note-text-input { font-family: inherit; resize: vertical; min-height: 4em; }
.pi-notes-all .pi-notes-group { margin: 8px 0; }
.pi-notes-group-title { font-weight: 600; font-size: 12px; margin-bottom: 2px; }
.pi-notes-findings .pi-notes-group-title { color: var(--pi-finding); }
.pi-note-pick { cursor: pointer; padding: 4px 6px; border-radius: 3px; }
.pi-note-pick:hover { background: var(--pi-bg2); }
.pi-lab .pi-note-pick:focus-visible { outline: 2px solid var(--pi-accent); outline-offset: -2px; }
.pi-note-entry { font-size: 11px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.pi-notes-store { font-size: 11px; overflow-wrap: anywhere; }
.pi-notes-missing { margin-top: 8px; font-size: 12px; }
.pi-note-missing { opacity: 0.75; }
.pi-tl-notes { position: relative; height: 16px; margin-top: 1px; }
.pi-lab .pi-tl-note { position: absolute; top: 0; width: 14px; height: 16px; padding: 0; border: none; background: none;
  color: var(--pi-note); font-size: 11px; line-height: 16px; cursor: pointer; }
.pi-lab .pi-tl-note-finding { color: var(--pi-finding); }
.pi-lab .pi-tl-note:hover { background: var(--pi-bg2); }
`;
