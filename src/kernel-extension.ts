/**
 * Loads jupyter-air's IPython extension into Python notebook kernels.
 *
 * The extension is what turns `mlflow.start_run()` typed in a cell into run links in the cell
 * output. Kernels are started by Jupyter, not by us, so the loader runs `%load_ext jupyter_air`
 * silently (no output, no history, no execution count) in each Python kernel: as soon as the
 * notebook gets its kernel connection (so the request is queued before any cell the user runs,
 * "Run All" on open included), and again when the kernel is idle after a restart. A kernel that
 * cannot import jupyter_air (another environment) is left as it was.
 */
import type { ISessionContext } from '@jupyterlab/apputils';
import type { Kernel } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

/** What the kernel runs: never raises, prints nothing. */
export const LOAD_CODE = [
  'try:',
  '    get_ipython().run_line_magic("load_ext", "jupyter_air")',
  'except Exception:',
  '    pass'
].join('\n');

/** Kernel states after which the extension must be loaded again. */
const RESET_STATES = new Set<Kernel.Status>([
  'starting',
  'restarting',
  'autorestarting',
  'dead'
]);

export class KernelExtensionLoader {
  /**
   * @param enabled - read at each kernel start (the user setting)
   * @param isPython - whether a kernel runs Python, from its kernel spec when known (synchronous,
   *   so the load is queued before anything else); `undefined` asks the kernel itself
   */
  constructor(
    private readonly _enabled: () => boolean = () => true,
    private readonly _isPython: (
      kernel: Kernel.IKernelConnection
    ) => boolean | undefined = () => undefined
  ) {}

  /** Load the extension into this session's kernels from now on. */
  watch(context: ISessionContext): IDisposable {
    const onStatus = (_: ISessionContext, status: Kernel.Status) => {
      const kernel = context.session?.kernel;
      if (RESET_STATES.has(status)) {
        if (kernel) {
          this._loaded.delete(kernel.id);
        }
        return;
      }
      if (status === 'idle' && kernel) {
        void this._load(kernel);
      }
    };
    const onKernel = () => {
      const kernel = context.session?.kernel;
      if (kernel) {
        void this._load(kernel);
      }
    };
    context.statusChanged.connect(onStatus);
    context.kernelChanged.connect(onKernel);
    let disposed = false;
    return {
      get isDisposed() {
        return disposed;
      },
      dispose: () => {
        if (!disposed) {
          disposed = true;
          context.statusChanged.disconnect(onStatus);
          context.kernelChanged.disconnect(onKernel);
        }
      }
    };
  }

  /** Ids of the kernels the extension was loaded into (since their last start). */
  get loaded(): ReadonlySet<string> {
    return this._loaded;
  }

  private async _load(kernel: Kernel.IKernelConnection): Promise<void> {
    if (this._loaded.has(kernel.id) || !this._enabled()) {
      return;
    }
    this._loaded.add(kernel.id);
    try {
      let python = this._isPython(kernel);
      if (python === undefined) {
        python = (await kernel.info).language_info?.name === 'python';
      }
      if (!python) {
        return;
      }
      await kernel.requestExecute(
        {
          code: LOAD_CODE,
          silent: true,
          store_history: false,
          allow_stdin: false,
          stop_on_error: false
        },
        true
      ).done;
    } catch (reason) {
      // a kernel that went away meanwhile: the next start tries again
      this._loaded.delete(kernel.id);
      console.debug('jupyter-air: kernel extension not loaded', reason);
    }
  }

  private readonly _loaded = new Set<string>();
}
