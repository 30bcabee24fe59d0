import { PromiseDelegate } from '@lumino/coreutils';

import { MAX_RETRY_MS, Poller } from '../common/poller';
import { advance } from './helpers';

/** A poll that records when it ran, answers from `next` and can be held. */
class FakeWork {
  calls: number[] = [];
  failNext = 0;
  hold: PromiseDelegate<void> | null = null;
  readonly poll = async (): Promise<void> => {
    this.calls.push(Date.now() - T0);
    if (this.hold) {
      await this.hold.promise;
    }
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('server down');
    }
  };
}

const T0 = 1_764_410_000_000;

/** Make the browser tab hidden or visible (what `Poll`'s standby watches). */
function setTabHidden(hidden: boolean): void {
  Object.defineProperty(document, 'visibilityState', {
    configurable: true,
    get: () => (hidden ? 'hidden' : 'visible')
  });
  document.dispatchEvent(new Event('visibilitychange'));
}

describe('Poller', () => {
  let work: FakeWork;
  let poller: Poller;
  let interval: number | null;

  function create(options: Partial<Poller.IOptions> = {}): Poller {
    poller?.dispose();
    poller = new Poller({
      name: 'test',
      poll: work.poll,
      interval: () => interval,
      ...options
    });
    return poller;
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
    work = new FakeWork();
    interval = 1000;
    create();
  });

  afterEach(() => {
    poller.dispose();
    setTabHidden(false);
    jest.useRealTimers();
  });

  it('polls at once when started, then at the cadence, and not at all when stopped', async () => {
    await advance(5000);
    expect(work.calls).toEqual([]);
    poller.start();
    expect(poller.isStarted).toBe(true);
    await advance(0);
    expect(work.calls).toEqual([5000]);
    await advance(999);
    expect(work.calls).toHaveLength(1);
    await advance(1);
    expect(work.calls).toEqual([5000, 6000]);
    interval = 3000; // the caller's cadence, read after each poll
    await advance(1000);
    await advance(3000);
    expect(work.calls.slice(2)).toEqual([7000, 10_000]);
    poller.stop();
    expect(jest.getTimerCount()).toBe(0);
    await advance(60_000);
    expect(work.calls).toHaveLength(4);
  });

  it('starts after a delay when asked to', async () => {
    poller.start(2000);
    await advance(1999);
    expect(work.calls).toEqual([]);
    await advance(1);
    expect(work.calls).toEqual([2000]);
  });

  it('runs one poll at a time: asks while one is in flight make one more after it', async () => {
    work.hold = new PromiseDelegate();
    poller.start();
    await advance(0);
    expect(work.calls).toHaveLength(1);
    const first = poller.refresh();
    const second = poller.refresh();
    await advance(5000);
    expect(work.calls).toHaveLength(1); // nothing alongside the one in flight
    const held = work.hold;
    work.hold = null;
    held.resolve();
    await first;
    await second;
    expect(work.calls).toHaveLength(2);
    // and the cadence goes on from there
    await advance(1000);
    expect(work.calls).toHaveLength(3);
  });

  it('refreshes while stopped once, without starting', async () => {
    await poller.refresh();
    expect(work.calls).toEqual([0]);
    expect(poller.isStarted).toBe(false);
    await advance(10_000);
    expect(work.calls).toHaveLength(1);
  });

  it('polls again a whole interval after a refresh', async () => {
    poller.start();
    await advance(600);
    await poller.refresh();
    expect(work.calls).toEqual([0, 600]);
    await advance(999);
    expect(work.calls).toHaveLength(2);
    await advance(1);
    expect(work.calls).toEqual([0, 600, 1600]);
  });

  it('waits for a refresh or a new cadence when the cadence says none', async () => {
    interval = null;
    poller.start();
    await advance(60_000);
    expect(work.calls).toEqual([0]);
    interval = 500;
    poller.reschedule();
    await advance(500);
    expect(work.calls).toEqual([0, 60_500]);
  });

  it('backs off after failures in a row, then polls at the cadence again', async () => {
    work.failNext = 3;
    poller.start();
    await advance(0);
    expect(poller.failures).toBe(1);
    // after the n-th failure: interval × 2^(n-1)
    await advance(1000);
    expect(work.calls).toEqual([0, 1000]);
    await advance(1999);
    expect(work.calls).toHaveLength(2);
    await advance(1);
    expect(work.calls).toEqual([0, 1000, 3000]);
    await advance(4000);
    expect(work.calls).toEqual([0, 1000, 3000, 7000]);
    expect(poller.failures).toBe(0);
    await advance(1000);
    expect(work.calls).toEqual([0, 1000, 3000, 7000, 8000]);
  });

  it('backs off to at most maxRetryMs', async () => {
    create({ maxRetryMs: 5000 });
    work.failNext = 10;
    poller.start();
    for (let i = 0; i < 6; i++) {
      await advance(5000);
    }
    const gaps = work.calls.slice(1).map((t, i) => t - work.calls[i]);
    expect(gaps).toEqual([1000, 2000, 4000, 5000, 5000, 5000, 5000]);
    expect(MAX_RETRY_MS).toBe(5 * 60 * 1000);
  });

  it('retries a long-poll (interval 0) and a one-off read (no cadence) after retryMs', async () => {
    interval = 0;
    create({ retryMs: 3000 });
    work.failNext = 1;
    poller.start();
    await advance(0);
    await advance(2999);
    expect(work.calls).toEqual([0]); // no tight loop against a failing server
    await advance(1);
    expect(work.calls).toEqual([0, 3000]);

    interval = null;
    create({ retryMs: 3000 });
    work.calls = [];
    work.failNext = 1;
    poller.start();
    await advance(3000);
    expect(work.calls).toEqual([3000, 6000]);
    await advance(60_000);
    expect(work.calls).toHaveLength(2); // read: no more
  });

  it('stands by while the browser tab is hidden', async () => {
    poller.start();
    await advance(0);
    setTabHidden(true);
    await advance(10_000);
    // one more poll as the tab hides (Poll lingers a tick), then none
    expect(work.calls).toEqual([0, 1000]);
    setTabHidden(false);
    await advance(1000);
    expect(work.calls).toEqual([0, 1000, 11_000]);
  });

  it('leaves no timer and sends nothing once disposed', async () => {
    poller.start();
    await advance(0);
    expect(jest.getTimerCount()).toBe(1);
    poller.dispose();
    expect(jest.getTimerCount()).toBe(0);
    await poller.refresh();
    poller.start();
    await advance(10_000);
    expect(work.calls).toEqual([0]);
    expect(poller.isDisposed).toBe(true);
  });
});
