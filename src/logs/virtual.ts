/**
 * Which rows of a long list are on screen: every row has the same height, so the rows to draw
 * follow from the scroll position alone and only those (plus a few either side) are in the DOM.
 */

/** The height of a log row (px): fixed, so the list can be virtual (see logs.css). */
export const ROW_HEIGHT = 20;
/** Rows drawn beyond each edge of the screen (smooth scrolling). */
export const OVERSCAN = 10;
/** Rows drawn when the viewport's height is not known yet (not laid out). */
export const DEFAULT_VIEWPORT_ROWS = 40;

/** The rows to draw: [start, end). */
export function visibleRange(
  scrollTop: number,
  viewportHeight: number,
  count: number,
  rowHeight: number = ROW_HEIGHT,
  overscan: number = OVERSCAN
): { start: number; end: number } {
  if (count <= 0) {
    return { start: 0, end: 0 };
  }
  const height =
    viewportHeight > 0 ? viewportHeight : DEFAULT_VIEWPORT_ROWS * rowHeight;
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const last = Math.ceil((Math.max(0, scrollTop) + height) / rowHeight);
  const start = Math.max(0, Math.min(count, first - overscan));
  const end = Math.max(start, Math.min(count, last + overscan));
  return { start, end };
}
