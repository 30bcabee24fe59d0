/**
 * Small DOM helpers for every view (side panels, run displays, the MLflow tab, the Logs view).
 *
 * Every view builds its elements once and updates them in place on each poll; these helpers keep
 * that cheap and safe: text goes through `textContent` (data is never parsed as HTML) and nothing
 * is written when the value did not change, so an unchanged panel costs no layout work.
 */

/** Create an element with a class and optional text. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (className) {
    el.className = className;
  }
  if (text !== undefined) {
    el.textContent = text;
  }
  return el;
}

/** A `<div>` for errors, announced by screen readers as they change (`role="alert"`). */
export function alertBox(className: string): HTMLDivElement {
  const el = h('div', className);
  el.setAttribute('role', 'alert');
  return el;
}

/** A `<thead>` of one row of column headers (`<th scope="col">`), one per label. */
export function tableHead(labels: string[]): HTMLTableSectionElement {
  const head = h('thead');
  const row = h('tr');
  for (const label of labels) {
    const th = h('th', undefined, label);
    th.scope = 'col';
    row.append(th);
  }
  head.append(row);
  return head;
}

/** A `<button type="button">` that runs `onClick`, with a tooltip when `title` is given. */
export function button(
  className: string,
  label: string,
  onClick: () => void,
  title?: string
): HTMLButtonElement {
  const el = h('button', className, label);
  el.type = 'button';
  if (title !== undefined) {
    el.title = title;
  }
  el.addEventListener('click', () => onClick());
  return el;
}

/** A link that opens in a browser tab, without giving that page a handle on this one. */
export function newTabLink(
  className: string,
  text?: string
): HTMLAnchorElement {
  const el = h('a', className, text);
  el.target = '_blank';
  el.rel = 'noopener noreferrer';
  return el;
}

/**
 * Whether the browser handles a click on a link itself (another button, or a modifier key: new
 * tab or window, download): views that act on plain clicks leave these alone.
 */
export function isNewTabClick(event: MouseEvent): boolean {
  return (
    event.button !== 0 ||
    event.ctrlKey ||
    event.metaKey ||
    event.shiftKey ||
    event.altKey
  );
}

/**
 * Write text only when it changed (no layout work for unchanged values); an element holding one
 * text node keeps it and has its data changed (no node is replaced, nothing left to collect).
 */
export function setText(el: HTMLElement, text: string): void {
  const only = el.firstChild;
  if (
    only !== null &&
    only === el.lastChild &&
    only.nodeType === Node.TEXT_NODE
  ) {
    if ((only as Text).data !== text) {
      if (text) {
        (only as Text).data = text;
      } else {
        el.textContent = '';
      }
    }
    return;
  }
  if (el.textContent !== text) {
    el.textContent = text;
  }
}

/** Show or hide an element (the `hidden` attribute), touching the DOM only on change. */
export function setHidden(el: HTMLElement, hidden: boolean): void {
  if (el.hidden !== hidden) {
    el.hidden = hidden;
  }
}

/** Set an attribute only when its value changed. */
export function setAttr(el: HTMLElement, name: string, value: string): void {
  if (el.getAttribute(name) !== value) {
    el.setAttribute(name, value);
  }
}

/** Width of a meter's fill, `0%`..`100%`, or hidden when unknown. */
export function setMeter(
  fill: HTMLElement,
  percent: number | null | undefined
): void {
  const known = typeof percent === 'number' && Number.isFinite(percent);
  setHidden(fill, !known);
  if (known) {
    const width = `${Math.min(100, Math.max(0, percent as number)).toFixed(1)}%`;
    if (fill.style.width !== width) {
      fill.style.width = width;
    }
  }
}

/**
 * Make `items` the children of `parent`, in order, moving nodes only where needed (kept nodes
 * keep their state and cost no DOM work when already in place). Other children are left alone.
 */
export function placeInOrder(
  parent: HTMLElement,
  items: readonly HTMLElement[]
): void {
  let previous: HTMLElement | null = null;
  for (const item of items) {
    const expected: ChildNode | null = previous
      ? previous.nextSibling
      : parent.firstChild;
    if (expected !== item) {
      parent.insertBefore(item, expected);
    }
    previous = item;
  }
}

/**
 * Place the `roots` of the views shown, in order (as `placeInOrder`), and drop every view of
 * `views` whose key is not in `shown`: from the page and from the map.
 */
export function placeViews<K, V extends { root: HTMLElement }>(
  parent: HTMLElement,
  roots: readonly HTMLElement[],
  views: Map<K, V>,
  shown: ReadonlySet<K>
): void {
  placeInOrder(parent, roots);
  for (const [key, view] of views) {
    if (!shown.has(key)) {
      view.root.remove();
      views.delete(key);
    }
  }
}

/** Run `open` when `el`, which acts as a button, gets Enter or Space. */
export function onEnterOrSpace(el: HTMLElement, open: () => void): void {
  el.addEventListener('keydown', event => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      open();
    }
  });
}

/** Make `items` exactly the children of `parent`, in order (others removed). */
export function setChildren(
  parent: HTMLElement,
  items: readonly HTMLElement[]
): void {
  placeInOrder(parent, items);
  while (parent.childNodes.length > items.length) {
    parent.lastChild!.remove();
  }
}

/** The options of a `<select>` as `[value, label]` pairs, rebuilt only when they changed. */
export function setOptions(
  select: HTMLSelectElement,
  entries: readonly (readonly [string, string])[]
): void {
  const same =
    select.options.length === entries.length &&
    entries.every(
      ([value, label], i) =>
        select.options[i].value === value && select.options[i].text === label
    );
  if (!same) {
    select.replaceChildren(
      ...entries.map(([value, label]) => {
        const option = h('option', undefined, label);
        option.value = value;
        return option;
      })
    );
  }
}

/** Select `value` in a `<select>` (nothing when it is already selected). */
export function setValue(
  el: HTMLSelectElement | HTMLInputElement,
  value: string
): void {
  if (el.value !== value) {
    el.value = value;
  }
}

/** A `<label>` with its text above (or before) a control. */
export function labelled(
  className: string,
  textClassName: string,
  text: string,
  control: HTMLElement
): HTMLLabelElement {
  const label = h('label', className);
  label.append(h('span', textClassName, text), control);
  return label;
}
