import { CANCEL_EVENT, ICancelActions, listenForCancel } from '../live/cancel';

function actions(): ICancelActions & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    interrupt: async node => {
      calls.push(`interrupt ${node.className}`);
      return true;
    },
    cancelJob: async id => {
      calls.push(`cancel ${id}`);
    }
  };
}

function click(target: Element, detail: unknown): void {
  target.dispatchEvent(
    new CustomEvent(CANCEL_EVENT, { bubbles: true, detail })
  );
}

const flush = () => new Promise(resolve => setTimeout(resolve, 0));

describe('Cancel in a live widget', () => {
  it('interrupts the kernel of the output, or cancels the job run', async () => {
    const done = actions();
    const stop = listenForCancel(document, done);
    const button = document.createElement('button');
    button.className = 'jp-air-live-cancel';
    document.body.append(button);
    click(button, { action: 'interrupt' });
    click(button, { action: 'cancel-job', job_id: '3f2a9c1b0d4e' });
    await flush();
    expect(done.calls).toEqual([
      'interrupt jp-air-live-cancel',
      'cancel 3f2a9c1b0d4e'
    ]);
    // what is not a request we know does nothing; nor does anything once disposed
    click(button, { action: 'format-disk' });
    click(button, { action: 'cancel-job' });
    stop();
    click(button, { action: 'interrupt' });
    await flush();
    expect(done.calls).toHaveLength(2);
    button.remove();
  });
});
