/**
 * The translation domain of jupyter-air's strings, and the bundle a view uses when it is made
 * without a translator (tests, a JupyterLab without `ITranslator`): the strings as written.
 *
 * Every visible string goes through a `TranslationBundle` (`trans.__('…')`, `trans._n(…)`); the
 * plugins load it from JupyterLab's `ITranslator` and hand the translator to their views.
 */
import {
  ITranslator,
  TranslationBundle,
  nullTranslator
} from '@jupyterlab/translation';

/** The gettext domain of jupyter-air (its Python package name). */
export const TRANSLATION_DOMAIN = 'jupyter_air';

/** The bundle of jupyter-air's strings in `translator` (the strings as written without one). */
export function loadTranslation(
  translator?: ITranslator | null
): TranslationBundle {
  return (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
}
