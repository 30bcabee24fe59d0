/**
 * Watches for user activity in the page, so the GPU panel can stop polling when nobody is there.
 *
 * Listens (passively) to pointer, key and wheel events on a target (the document) and calls back
 * at most once per `throttleMs`: pointermove fires many times a second and must cost nothing.
 */
import { IDisposable } from '@lumino/disposable';

/** The events that count as activity. */
export const ACTIVITY_EVENTS = [
  'pointerdown',
  'keydown',
  'wheel',
  'pointermove'
] as const;

/** Call `onActivity` (throttled) on user activity in `target`; dispose to stop. */
export function watchActivity(
  target: EventTarget,
  onActivity: () => void,
  throttleMs = 1000,
  now: () => number = () => Date.now()
): IDisposable {
  let last = -Infinity;
  let disposed = false;
  const listener = () => {
    const t = now();
    if (t - last >= throttleMs) {
      last = t;
      onActivity();
    }
  };
  const options: AddEventListenerOptions = { passive: true, capture: true };
  for (const type of ACTIVITY_EVENTS) {
    target.addEventListener(type, listener, options);
  }
  return {
    get isDisposed() {
      return disposed;
    },
    dispose() {
      if (disposed) {
        return;
      }
      disposed = true;
      for (const type of ACTIVITY_EVENTS) {
        target.removeEventListener(type, listener, options);
      }
    }
  };
}
