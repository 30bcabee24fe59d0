/**
 * Links of job runs into the MLflow UI: the server gives absolute ones
 * (`/user/alice/air/mlflow/#/experiments/1/runs/abc?workflowType=machine_learning`). Each is a
 * real `<a href>` (middle-click, "open in new tab"); a plain click opens its `#…` part in the
 * MLflow tab through `jupyter-air:open-mlflow`.
 */
import { CommandIDs, ICommandRunner } from '../commands';
import { isNewTabClick, newTabLink, setAttr, setHidden } from '../common/dom';
import { safeFragment, safeUiUrl } from '../mlflow/links';

/** The `#…` part of an MLflow UI link, `null` when it has none (or an unsafe one). */
export function linkFragment(link: unknown): string | null {
  if (typeof link !== 'string') {
    return null;
  }
  const hash = link.indexOf('#');
  return hash < 0 ? null : safeFragment(link.slice(hash));
}

/** An MLflow link of a job page or row: hidden while it has no target. */
export class MlflowLink {
  constructor(
    commands: ICommandRunner,
    className: string,
    label: string,
    title: string
  ) {
    this.node = newTabLink(`jp-air-wl-link ${className}`, label);
    this.node.title = title;
    this.node.hidden = true;
    this.node.addEventListener('click', event => {
      event.stopPropagation(); // rows under it do not open
      if (isNewTabClick(event)) {
        return; // the browser opens the href
      }
      event.preventDefault();
      const path = this._fragment;
      if (path === null) {
        return;
      }
      commands
        .execute(CommandIDs.openMlflow, { path })
        .catch(reason =>
          console.warn('jupyter-air: cannot open the MLflow UI', reason)
        );
    });
  }

  readonly node: HTMLAnchorElement;

  /** Point at an MLflow UI link (`undefined`/`null`: hidden). */
  update(link: unknown): void {
    const href = typeof link === 'string' ? safeUiUrl(link) : null;
    this._fragment = linkFragment(link);
    const usable = href !== null && this._fragment !== null;
    setHidden(this.node, !usable);
    if (usable) {
      setAttr(this.node, 'href', href!);
    } else {
      this.node.removeAttribute('href');
    }
  }

  private _fragment: string | null = null;
}
