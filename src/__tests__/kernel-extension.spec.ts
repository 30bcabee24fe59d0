import { Signal } from '@lumino/signaling';

import {
  KernelExtensionLoader,
  LOAD_CODE,
  WIDGETS_CODE,
  pathCode
} from '../kernel-extension';

/** A kernel that records what it was asked to run. */
class FakeKernel {
  constructor(
    public id: string,
    language = 'python'
  ) {
    this.info = Promise.resolve({ language_info: { name: language } });
  }
  status = 'idle';
  info: Promise<any>;
  executed: any[] = [];
  requestExecute(content: any) {
    this.executed.push(content);
    return { done: Promise.resolve({}) };
  }
}

/** The parts of a session context the loader uses. */
class FakeContext {
  statusChanged = new Signal<any, string>(this);
  kernelChanged = new Signal<any, any>(this);
  session: { kernel: FakeKernel | null } = { kernel: null };
  setKernel(kernel: FakeKernel) {
    this.session = { kernel };
    this.kernelChanged.emit({ newValue: kernel });
  }
  status(status: string) {
    if (this.session.kernel) {
      this.session.kernel.status = status;
    }
    this.statusChanged.emit(status);
  }
}

const flush = () => new Promise(resolve => setTimeout(resolve, 0));

/** A notebook (`context`) watched by `loader`, `kernel` its kernel. */
function watched<C extends FakeContext>(
  loader: KernelExtensionLoader,
  kernel: FakeKernel,
  context: C = new FakeContext() as C
): C {
  loader.watch(context as any);
  context.setKernel(kernel);
  return context;
}

/** The notebook's kernel goes through `statuses`, and what they start settles. */
async function goThrough(
  context: FakeContext,
  ...statuses: string[]
): Promise<void> {
  for (const status of statuses) {
    context.status(status);
  }
  await flush();
}

describe('KernelExtensionLoader', () => {
  it('queues the load as soon as the notebook has its kernel, before any cell', async () => {
    const loader = new KernelExtensionLoader(
      () => true,
      () => true // the kernel spec says Python
    );
    const context = new FakeContext();
    loader.watch(context as any);
    const kernel = new FakeKernel('k1');
    kernel.status = 'starting';
    context.setKernel(kernel);
    // synchronously: nothing the user runs afterwards can get ahead of it
    expect(kernel.executed).toHaveLength(1);
    await goThrough(context, 'idle', 'busy', 'idle');
    expect(kernel.executed).toHaveLength(1);
  });

  it('asks the kernel for its language when the spec is unknown, once', async () => {
    const loader = new KernelExtensionLoader();
    const kernel = new FakeKernel('k1');
    const context = watched(loader, kernel);
    await goThrough(context, 'idle', 'busy', 'idle');
    expect(kernel.executed).toHaveLength(1);
    expect(kernel.executed[0]).toMatchObject({
      code: LOAD_CODE,
      silent: true,
      store_history: false,
      stop_on_error: false
    });
    expect(LOAD_CODE).toContain('run_line_magic("load_ext", "jupyter_air")');
    expect(LOAD_CODE).toContain('except Exception');
  });

  it('loads it again after a restart and into a new kernel', async () => {
    const loader = new KernelExtensionLoader();
    const kernel = new FakeKernel('k1');
    const context = watched(loader, kernel);
    await flush();
    expect(kernel.executed).toHaveLength(1);

    await goThrough(context, 'restarting', 'idle');
    expect(kernel.executed).toHaveLength(2);

    const other = new FakeKernel('k2');
    context.setKernel(other); // a new kernel: loaded at once
    await flush();
    expect(other.executed).toHaveLength(1);
  });

  it('leaves other languages alone', async () => {
    const byKernel = new KernelExtensionLoader();
    const bySpec = new KernelExtensionLoader(
      () => true,
      () => false
    );
    const julia = new FakeKernel('j1', 'python'); // the spec wins over a slow info reply
    const specContext = new FakeContext();
    bySpec.watch(specContext as any);
    specContext.setKernel(julia);
    await flush();
    expect(julia.executed).toHaveLength(0);
    const loader = byKernel;
    const kernel = new FakeKernel('r1', 'R');
    const context = watched(loader, kernel);
    await goThrough(context, 'idle');
    expect(kernel.executed).toHaveLength(0);
  });

  it('does nothing when turned off in the settings', async () => {
    let enabled = false;
    const loader = new KernelExtensionLoader(() => enabled);
    const kernel = new FakeKernel('k1');
    const context = watched(loader, kernel);
    await goThrough(context, 'idle');
    expect(kernel.executed).toHaveLength(0);
    enabled = true;
    await goThrough(context, 'restarting', 'idle');
    expect(kernel.executed).toHaveLength(1);
  });

  it('stops watching when disposed', async () => {
    const loader = new KernelExtensionLoader();
    const context = new FakeContext();
    const watching = loader.watch(context as any);
    watching.dispose();
    expect(watching.isDisposed).toBe(true);
    const kernel = new FakeKernel('k1');
    context.setKernel(kernel);
    await goThrough(context, 'idle');
    expect(kernel.executed).toHaveLength(0);
  });
});

describe('the notebook path the kernel knows', () => {
  /** A notebook's session context: a path, and its renames. */
  class FakeNotebookContext extends FakeContext {
    path = 'exp/train.ipynb';
    propertyChanged = new Signal<any, string>(this);
    rename(path: string) {
      this.path = path;
      this.propertyChanged.emit('path');
    }
  }

  it('comes with the load, and again after each rename', async () => {
    const loader = new KernelExtensionLoader(
      () => true,
      () => true
    );
    const kernel = new FakeKernel('k1');
    const context = watched(loader, kernel, new FakeNotebookContext());
    await flush();
    expect(kernel.executed[0].code).toBe(
      `${LOAD_CODE}\n${pathCode('exp/train.ipynb')}`
    );
    context.rename('exp/renamed "q".ipynb');
    await flush();
    expect(kernel.executed).toHaveLength(2);
    expect(kernel.executed[1]).toMatchObject({
      code: pathCode('exp/renamed "q".ipynb'),
      silent: true,
      store_history: false
    });
    // a JSON string is a Python string literal: quotes stay inside it
    expect(pathCode('a"; import os; os.system("x") #.ipynb')).toContain(
      '= "a\\"; import os; os.system(\\"x\\") #.ipynb"'
    );
  });

  it('is not sent to kernels of other languages, nor before a load', async () => {
    const loader = new KernelExtensionLoader(
      () => true,
      () => false
    );
    const kernel = new FakeKernel('k1', 'r');
    const context = watched(loader, kernel, new FakeNotebookContext());
    await flush();
    context.rename('other.ipynb');
    await flush();
    expect(kernel.executed).toHaveLength(0);
  });
});

describe('widgets', () => {
  it('tells the kernel with the load when the notebook shows widgets, and not otherwise', async () => {
    const loader = new KernelExtensionLoader(
      () => true,
      () => true
    );
    let shows = true;
    const context = new FakeContext();
    loader.watch(context as any, () => shows);
    const kernel = new FakeKernel('k1');
    context.setKernel(kernel);
    await flush();
    expect(kernel.executed[0].code).toBe(`${LOAD_CODE}\n${WIDGETS_CODE}`);
    expect(WIDGETS_CODE).toContain('environ["JUPYTER_AIR_WIDGETS"] = "1"');
    shows = false;
    const other = new FakeKernel('k2');
    context.setKernel(other);
    await flush();
    expect(other.executed[0].code).toBe(LOAD_CODE);
  });
});
