/**
 * Loads jupyter-air's IPython extension into Python notebook kernels.
 *
 * The extension is what turns `mlflow.start_run()` typed in a cell into run links in the cell
 * output. Kernels are started by Jupyter, not by us, so the loader runs `%load_ext jupyter_air`
 * silently (no output, no history, no execution count) in each Python kernel: as soon as the
 * notebook gets its kernel connection (so the request is queued before any cell the user runs,
 * "Run All" on open included), and again when the kernel is idle after a restart. A kernel that
 * cannot import jupyter_air (another environment) is left as it was.
 *
 * It also tells the kernel the notebook's path (`JUPYTER_AIR_NOTEBOOK_PATH`), with the load and
 * again whenever the notebook is renamed or moved: Jupyter gives a kernel its notebook's path only
 * when it starts, and runs are named and tagged after the notebook they come from. And, with the
 * load, whether the notebook shows widgets (`JUPYTER_AIR_WIDGETS=1`: its renderers include the
 * widget view): only then do running calls show their live widget (jupyter_air/notebook/live_widget.py);
 * nbclient and consoles, which never say so, keep the plain output.
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

/** The variable that tells the kernel its notebook's path (relative to the server root). */
export const NOTEBOOK_PATH_VARIABLE = 'JUPYTER_AIR_NOTEBOOK_PATH';

/**
 * What the kernel runs to learn its notebook's path: never raises, prints nothing. The path is
 * a JSON string, which is also a valid Python string literal (no code can be injected by a name).
 */
export function pathCode(path: string): string {
  return [
    'try:',
    '    import os as _jupyter_air_os',
    `    _jupyter_air_os.environ["${NOTEBOOK_PATH_VARIABLE}"] = ${JSON.stringify(path)}`,
    '    del _jupyter_air_os',
    'except Exception:',
    '    pass'
  ].join('\n');
}

/** The variable that tells the kernel its notebook shows widgets. */
export const WIDGETS_VARIABLE = 'JUPYTER_AIR_WIDGETS';

/** The MIME type of a widget's view: a notebook that renders it shows widgets. */
export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** What the kernel runs to learn that its notebook shows widgets: never raises, prints nothing. */
export const WIDGETS_CODE = [
  'try:',
  '    import os as _jupyter_air_os',
  `    _jupyter_air_os.environ["${WIDGETS_VARIABLE}"] = "1"`,
  '    del _jupyter_air_os',
  'except Exception:',
  '    pass'
].join('\n');

/** The load, the notebook's path when it has one, and whether it shows widgets. */
export function loadCode(path?: string | null, widgets = false): string {
  const parts = [LOAD_CODE];
  if (path) {
    parts.push(pathCode(path));
  }
  if (widgets) {
    parts.push(WIDGETS_CODE);
  }
  return parts.join('\n');
}

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

  /**
   * Load the extension into this session's kernels from now on.
   *
   * @param widgets - whether the session's notebook shows widgets (read at each load)
   */
  watch(
    context: ISessionContext,
    widgets: () => boolean = () => false
  ): IDisposable {
    const onStatus = (_: ISessionContext, status: Kernel.Status) => {
      const kernel = context.session?.kernel;
      if (RESET_STATES.has(status)) {
        if (kernel) {
          this._loaded.delete(kernel.id);
          this._python.delete(kernel.id);
        }
        return;
      }
      if (status === 'idle' && kernel) {
        void this._load(kernel, context.path, widgets);
      }
    };
    const onKernel = () => {
      const kernel = context.session?.kernel;
      if (kernel) {
        void this._load(kernel, context.path, widgets);
      }
    };
    const onProperty = (_: ISessionContext, property: string) => {
      const kernel = context.session?.kernel;
      if (property === 'path' && kernel && this._python.has(kernel.id)) {
        this._run(kernel, pathCode(context.path)).catch(reason =>
          console.debug('jupyter-air: kernel not told of the rename', reason)
        );
      }
    };
    context.statusChanged.connect(onStatus);
    context.kernelChanged.connect(onKernel);
    context.propertyChanged?.connect(onProperty);
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
          context.propertyChanged?.disconnect(onProperty);
        }
      }
    };
  }

  /** Ids of the kernels the extension was loaded into (since their last start). */
  get loaded(): ReadonlySet<string> {
    return this._loaded;
  }

  private async _load(
    kernel: Kernel.IKernelConnection,
    path?: string,
    widgets: () => boolean = () => false
  ): Promise<void> {
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
      this._python.add(kernel.id);
      await this._run(kernel, loadCode(path, widgets()));
    } catch (reason) {
      // a kernel that went away meanwhile: the next start tries again
      this._loaded.delete(kernel.id);
      this._python.delete(kernel.id);
      console.debug('jupyter-air: kernel extension not loaded', reason);
    }
  }

  /** Run code silently (no output, no history, no execution count). */
  private async _run(
    kernel: Kernel.IKernelConnection,
    code: string
  ): Promise<void> {
    await kernel.requestExecute(
      {
        code,
        silent: true,
        store_history: false,
        allow_stdin: false,
        stop_on_error: false
      },
      true
    ).done;
  }

  private readonly _loaded = new Set<string>();
  /** Python kernels the extension was loaded into: they are told of renames. */
  private readonly _python = new Set<string>();
}
