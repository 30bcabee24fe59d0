import { watchActivity } from '../gpu/activity';

describe('watchActivity', () => {
  it('reports pointer, key and wheel activity, throttled, until disposed', () => {
    let now = 0;
    const seen: number[] = [];
    const target = document.createElement('div');
    const watcher = watchActivity(
      target,
      () => seen.push(now),
      1000,
      () => now
    );

    target.dispatchEvent(new Event('pointermove'));
    target.dispatchEvent(new Event('pointermove'));
    expect(seen).toEqual([0]);
    now = 999;
    target.dispatchEvent(new Event('keydown'));
    expect(seen).toEqual([0]);
    now = 1000;
    target.dispatchEvent(new Event('wheel'));
    now = 2500;
    target.dispatchEvent(new Event('pointerdown'));
    expect(seen).toEqual([0, 1000, 2500]);
    now = 9000;
    target.dispatchEvent(new Event('focus'));
    expect(seen).toEqual([0, 1000, 2500]);

    watcher.dispose();
    expect(watcher.isDisposed).toBe(true);
    now = 20000;
    target.dispatchEvent(new Event('keydown'));
    expect(seen).toEqual([0, 1000, 2500]);
  });
});
