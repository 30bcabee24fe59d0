/**
 * A widget that works only while the user can see it (polls a server, ticks a clock).
 *
 * Lumino tells a widget it became visible or hidden in four ways (attached while visible,
 * detached, shown, hidden); the GPU panel, the Experiment panel and the MLflow tab all need the
 * same two events out of them, so they extend this instead of repeating the four handlers.
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

export abstract class ShownWidget extends Widget {
  /** The widget became visible: start polling, ticking. */
  protected abstract onShown(): void;

  /** The widget is no longer visible: stop sending anything. */
  protected abstract onHidden(): void;

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this.onShown();
    }
  }

  protected onBeforeDetach(msg: Message): void {
    this.onHidden();
    super.onBeforeDetach(msg);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.onShown();
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.onHidden();
  }
}
