/**
 * What every view's text shares: the mark of an empty value, the number test that keeps an
 * unknown value from showing as 0 (API fields may be missing, `null` or of the wrong type), and
 * the words of an enumeration's values looked up in a table. No JupyterLab code at run time: the
 * MLflow page script uses it too.
 */
import { TranslationBundle } from '@jupyterlab/translation';

/** Shown where there is nothing (no value, no owner, no data yet). */
export const NONE = '—';

/** A finite number when it is one, else `null`. */
export function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** Texts by key (an enumeration's values), each in the view's language when asked. */
export type Wordings = Readonly<
  Record<string, (trans: TranslationBundle) => string>
>;

/** The text of `key` in `wordings`; `undefined` for a key it does not have. */
export function wordingOf(
  trans: TranslationBundle,
  wordings: Wordings,
  key: unknown
): string | undefined {
  return typeof key === 'string' &&
    Object.prototype.hasOwnProperty.call(wordings, key)
    ? wordings[key](trans)
    : undefined;
}
