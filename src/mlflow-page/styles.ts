/**
 * The Logs tab's styles, added once to MLflow's page. Neutral colours that read on MLflow's light
 * and dark themes; the 16 terminal colours are those of the Logs view (style/logs.css).
 */
import { MARK } from './tab';

const ANSI = [
  '#3e424d',
  '#e75c58',
  '#00a250',
  '#ddb62b',
  '#208ffb',
  '#d160c4',
  '#60c6c8',
  '#c5c1b4',
  '#282c36',
  '#b22b31',
  '#007427',
  '#b27d12',
  '#0065ca',
  '#a03196',
  '#258f8f',
  '#a1a6b2'
];

export const CSS = `
.jp-air-mlf-logs {
  ${ANSI.map((color, i) => `--jp-air-ansi-${i}: ${color};`).join('\n  ')}
  display: flex;
  flex-direction: column;
  gap: 8px;
  padding: 8px 0;
  min-height: 0;
  font-size: 13px;
}
.jp-air-mlf-logs[hidden], .jp-air-mlf-logs [hidden] { display: none !important; }
.jp-air-mlf-logs-toolbar {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 8px 12px;
}
.jp-air-mlf-logs-toolbar input, .jp-air-mlf-logs-toolbar select {
  font: inherit;
  color: inherit;
  background: transparent;
  border: 1px solid rgba(128, 128, 128, 0.45);
  border-radius: 4px;
  padding: 3px 6px;
}
.jp-air-mlf-logs-search { min-width: 220px; }
.jp-air-mlf-logs-levels, .jp-air-mlf-logs-range { display: inline-flex; gap: 10px; align-items: center; }
.jp-air-mlf-logs-level, .jp-air-mlf-logs-range label { display: inline-flex; gap: 4px; align-items: center; }
.jp-air-mlf-logs-button {
  font: inherit;
  color: inherit;
  background: transparent;
  border: 1px solid rgba(128, 128, 128, 0.45);
  border-radius: 4px;
  padding: 3px 10px;
  cursor: pointer;
  text-decoration: none;
}
.jp-air-mlf-logs-button:hover { border-color: #2272b4; color: #2272b4; }
.jp-air-mlf-logs-statusbar { display: flex; gap: 12px; align-items: center; opacity: 0.85; }
.jp-air-mlf-logs-lines {
  height: 60vh;
  overflow: auto;
  border: 1px solid rgba(128, 128, 128, 0.35);
  border-radius: 4px;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px;
  line-height: 18px;
  padding: 4px 0;
}
.jp-air-mlf-logs-row { display: flex; gap: 10px; padding: 0 8px; white-space: pre; }
.jp-air-mlf-logs-row:hover { background: rgba(128, 128, 128, 0.12); }
.jp-air-mlf-logs-time, .jp-air-mlf-logs-node { flex: none; opacity: 0.7; }
.jp-air-mlf-logs-level-badge { flex: none; width: 5ch; font-weight: 600; }
.jp-air-mlf-logs-row[data-level='warning'] .jp-air-mlf-logs-level-badge { color: #be501e; }
.jp-air-mlf-logs-row[data-level='error'] .jp-air-mlf-logs-level-badge { color: #c82d4c; }
.jp-air-mlf-logs-row[data-level='error'] { background: rgba(200, 45, 76, 0.08); }
.jp-air-mlf-logs-text { white-space: pre-wrap; word-break: break-all; }
.jp-air-mlf-logs .jp-air-logs-match { background: #fde68a; color: #111; border-radius: 2px; }
.jp-air-mlf-logs .jp-air-ansi-fg { color: var(--jp-air-ansi-fg); }
.jp-air-mlf-logs .jp-air-ansi-bg { background-color: var(--jp-air-ansi-bg); }
.jp-air-mlf-logs .jp-air-ansi-bold { font-weight: bold; }
.jp-air-mlf-logs .jp-air-ansi-dim { opacity: 0.7; }
.jp-air-mlf-logs .jp-air-ansi-italic { font-style: italic; }
.jp-air-mlf-logs .jp-air-ansi-underline { text-decoration: underline; }
.jp-air-mlf-logs-message { padding: 24px 8px; }
.jp-air-mlf-logs-message-title { font-weight: 600; margin: 0 0 4px; }
.jp-air-mlf-logs-message-detail { margin: 0; opacity: 0.8; }
.jp-air-mlf-logs-older { align-self: flex-start; }
.jp-air-mlf-logs-fallback {
  position: fixed;
  right: 16px;
  bottom: 16px;
  z-index: 1000;
  padding: 6px 14px;
  border-radius: 16px;
  background: #2272b4;
  color: #fff !important;
  font: 600 13px/1.4 system-ui, sans-serif;
  text-decoration: none;
  box-shadow: 0 2px 8px rgba(0, 0, 0, 0.25);
}
`;

/** Add the styles to the page (once). */
export function addStyles(doc: Document = document): void {
  if (doc.querySelector(`style[${MARK}="mlflow-page"]`) !== null) {
    return;
  }
  const style = doc.createElement('style');
  style.setAttribute(MARK, 'mlflow-page');
  style.textContent = CSS;
  doc.head.append(style);
}
