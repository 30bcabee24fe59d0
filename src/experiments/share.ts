/**
 * Sharing the shown experiment with another user of a team MLflow server (one with MLflow's
 * authentication): the dialog that asks whom and with which permission, and the call
 * (`POST air/api/experiments/{id}/share`, what `air share experiment` does; docs/teams.md).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { IShareRequest, ISharedExperiment } from '../api/models';
import { h, labelled, setOptions } from '../common/dom';

/** MLflow's experiment permissions, least first. */
export const PERMISSIONS: readonly IShareRequest['permission'][] = [
  'READ',
  'EDIT',
  'MANAGE'
];

/** Share experiment `experimentId` as the request says. */
export function shareExperiment(
  experimentId: string,
  request: IShareRequest
): Promise<ISharedExperiment> {
  return requestAPI<ISharedExperiment>(
    `experiments/${encodeURIComponent(experimentId)}/share`,
    { method: 'POST', body: JSON.stringify(request) }
  );
}

/** The dialog's body: a user name and a permission. */
export class ShareForm extends Widget {
  constructor(trans: TranslationBundle) {
    super({ node: h('div', 'jp-air-exp-share') });
    this.user = h('input', 'jp-air-exp-share-user');
    this.user.type = 'text';
    this.user.autocomplete = 'off';
    this.user.spellcheck = false;
    this.user.placeholder = trans.__('their MLflow user name');
    this.permission = h('select', 'jp-air-exp-share-permission');
    setOptions(this.permission, [
      ['READ', trans.__('READ: see its runs')],
      ['EDIT', trans.__('EDIT: also log and change runs')],
      ['MANAGE', trans.__('MANAGE: also delete and share')]
    ]);
    this.node.append(
      labelled(
        'jp-air-exp-share-field',
        'jp-air-exp-share-label',
        trans.__('User'),
        this.user
      ),
      labelled(
        'jp-air-exp-share-field',
        'jp-air-exp-share-label',
        trans.__('Permission'),
        this.permission
      )
    );
  }

  readonly user: HTMLInputElement;
  readonly permission: HTMLSelectElement;

  /** What the form says, or null while it names no user. */
  getValue(): IShareRequest | null {
    const username = this.user.value.trim();
    const permission = this.permission.value as IShareRequest['permission'];
    if (!username || !PERMISSIONS.includes(permission)) {
      return null;
    }
    return { username, permission };
  }

  protected onAfterAttach(): void {
    this.user.focus();
  }
}

/** Ask whom to share `experimentName` with; null when the user cancels or names no one. */
export async function askShare(
  trans: TranslationBundle,
  experimentName: string
): Promise<IShareRequest | null> {
  const result = await showDialog<IShareRequest | null>({
    title: trans.__('Share experiment %1', experimentName),
    body: new ShareForm(trans),
    buttons: [
      Dialog.cancelButton(),
      Dialog.okButton({ label: trans.__('Share') })
    ],
    focusNodeSelector: '.jp-air-exp-share-user'
  });
  return result.button.accept ? result.value : null;
}
