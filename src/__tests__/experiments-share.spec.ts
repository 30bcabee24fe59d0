import { Widget } from '@lumino/widgets';

import { APIError } from '../api';
import { IShareRequest, ISharedExperiment } from '../api/models';
import { ExperimentsModel } from '../experiments/model';
import { ExperimentsPanel } from '../experiments/panel';
import { ShareForm } from '../experiments/share';
import { HOSTILE, advance } from './helpers';
import { FakeRunsServer, T0_MS, runsPayload, status } from './mlflow-fixtures';

describe('Sharing the shown experiment', () => {
  let server: FakeRunsServer;
  let model: ExperimentsModel;
  let panel: ExperimentsPanel;
  let asked: string[];
  let answer: IShareRequest | null;
  let shared: [string, IShareRequest][];
  let share: (id: string, r: IShareRequest) => Promise<ISharedExperiment>;

  const q = <T extends HTMLElement = HTMLElement>(selector: string): T =>
    panel.node.querySelector(selector) as T;
  const shareButton = () => q<HTMLButtonElement>('.jp-air-exp-share-button');

  async function open(mode: 'embedded' | 'external', name = 'team/llm') {
    server.answer = () =>
      runsPayload({
        mlflow: status({ mode, tracking_uri: 'https://mlflow.team:5000' }),
        experiment: { experiment_id: '42', name },
        experiment_name: name
      });
    model.setNotebook('a.ipynb');
    Widget.attach(panel, document.body);
    await advance(0);
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_MS });
    server = new FakeRunsServer();
    model = server.model();
    asked = [];
    answer = { username: 'bob', permission: 'READ' };
    shared = [];
    share = async (id, request) => {
      shared.push([id, request]);
      return {
        experiment_id: id,
        experiment_name: 'team/llm',
        username: request.username,
        permission: request.permission,
        replaced: false
      };
    };
    panel = new ExperimentsPanel({
      model,
      commands: { execute: async () => undefined },
      askShare: async name => {
        asked.push(name);
        return answer;
      },
      share: (id, request) => share(id, request)
    });
  });

  afterEach(() => {
    panel.dispose();
    model.dispose();
    jest.useRealTimers();
  });

  it("is offered on the user's own MLflow server, not on jupyter-air's", async () => {
    await open('embedded');
    expect(shareButton().hidden).toBe(true);
    panel.dispose();
    panel = new ExperimentsPanel({
      model,
      commands: { execute: async () => undefined }
    });
    await open('external');
    expect(shareButton().hidden).toBe(false);
    expect(shareButton().title).toBe(
      'Give another user of this MLflow server access to this experiment'
    );
  });

  it('shares the shown experiment as asked and says so', async () => {
    await open('external');
    shareButton().click();
    await advance(0);
    expect(asked).toEqual(['team/llm']);
    expect(shared).toEqual([['42', { username: 'bob', permission: 'READ' }]]);
    const said = q('.jp-air-exp-shared');
    expect(said.hidden).toBe(false);
    expect(said.textContent).toBe('Shared team/llm with bob (READ).');
    expect(said.getAttribute('role')).toBe('status');
  });

  it('says when a permission was replaced', async () => {
    share = async (id, request) => ({
      experiment_id: id,
      experiment_name: 'team/llm',
      username: request.username,
      permission: 'MANAGE',
      replaced: true
    });
    answer = { username: 'bob', permission: 'MANAGE' };
    await open('external');
    shareButton().click();
    await advance(0);
    expect(q('.jp-air-exp-shared').textContent).toBe(
      'bob now has MANAGE on team/llm (their earlier permission replaced).'
    );
  });

  it('shares nothing when the dialog is cancelled', async () => {
    answer = null;
    await open('external');
    shareButton().click();
    await advance(0);
    expect(asked).toEqual(['team/llm']);
    expect(shared).toEqual([]);
    expect(q('.jp-air-exp-shared').hidden).toBe(true);
  });

  it("says the server's refusal as an alert, names as text", async () => {
    share = async () => {
      throw new APIError(
        404,
        `MLflow at https://mlflow.team:5000 has no user '${HOSTILE}'.`
      );
    };
    await open('external', HOSTILE);
    shareButton().click();
    await advance(0);
    const said = q('.jp-air-exp-shared');
    expect(said.textContent).toBe(
      `Cannot share ${HOSTILE}: MLflow at https://mlflow.team:5000 has no user '${HOSTILE}'. (HTTP 404)`
    );
    expect(said.getAttribute('role')).toBe('alert');
    expect(said.querySelector('img, script')).toBeNull();
  });
});

describe('The share form', () => {
  it('gives a trimmed user name and a permission, or nothing without a name', () => {
    const form = new ShareForm({ __: (s: string) => s } as any);
    expect(form.getValue()).toBeNull();
    form.user.value = '  bob ';
    expect(form.getValue()).toEqual({ username: 'bob', permission: 'READ' });
    form.permission.value = 'EDIT';
    expect(form.getValue()).toEqual({ username: 'bob', permission: 'EDIT' });
    expect(
      Array.from(form.permission.options).map(option => option.value)
    ).toEqual(['READ', 'EDIT', 'MANAGE']);
    form.dispose();
  });
});
