import { Widget } from '@lumino/widgets';

import { parseAnsi, stripAnsi } from '../logs/ansi';
import { logsDownloadUrl } from '../logs/api';
import { matchRanges, searchPattern } from '../logs/line';
import { LogsModel } from '../logs/model';
import { inputToSeconds, secondsToInput } from '../logs/time-range';
import { LogsView } from '../logs/view';
import { ROW_HEIGHT, visibleRange } from '../logs/virtual';
import { HOSTILE, advance, choose, finders, optionLabels } from './helpers';
import { FakeLogsServer, T0_S, runningJob } from './workloads-fixtures';

const VIEWPORT_HEIGHT = 400;

describe('ANSI codes', () => {
  it('become styled segments, other escapes and controls are dropped', () => {
    const line =
      '\x1b[1;31mERROR\x1b[0m plain \x1b[38;5;208morange\x1b[39m \x1b]0;title\x07\x1b[2Kdone\x07';
    expect(stripAnsi(line)).toBe('ERROR plain orange done');
    const segments = parseAnsi(line);
    // neighbours of one style are one segment
    expect(segments.map(s => s.text)).toEqual([
      'ERROR',
      ' plain ',
      'orange',
      ' done'
    ]);
    expect(segments[0]).toMatchObject({ fg: 1, bold: true });
    expect(segments[1]).toMatchObject({ fg: null, bold: false });
    expect(segments[2].fg).toBe('rgb(255, 135, 0)');
    expect(parseAnsi('\x1b[38;2;1;2;3mx')[0].fg).toBe('rgb(1, 2, 3)');
    expect(parseAnsi('\x1b[94;42mx')[0]).toMatchObject({ fg: 12, bg: 2 });
    expect(parseAnsi('no codes')).toEqual([
      {
        text: 'no codes',
        fg: null,
        bg: null,
        bold: false,
        dim: false,
        italic: false,
        underline: false
      }
    ]);
  });

  it('finds search matches in any case, literally', () => {
    expect(matchRanges('Loss is NaN, loss', searchPattern('loss'))).toEqual([
      [0, 4],
      [13, 17]
    ]);
    expect(matchRanges('a.b axb', searchPattern('a.b'))).toEqual([[0, 3]]);
    expect(matchRanges('x', searchPattern(''))).toEqual([]);
  });

  it('converts time inputs', () => {
    expect(inputToSeconds('')).toBeNull();
    expect(inputToSeconds('garbage')).toBeNull();
    expect(inputToSeconds(secondsToInput(T0_S))).toBe(T0_S);
  });
});

describe('virtual range', () => {
  it('covers the screen and a few rows either side', () => {
    expect(visibleRange(0, 400, 1_000_000)).toEqual({ start: 0, end: 30 });
    expect(visibleRange(20 * 5000, 400, 1_000_000)).toEqual({
      start: 4990,
      end: 5030
    });
    expect(visibleRange(20 * 5000, 400, 5010)).toEqual({
      start: 4990,
      end: 5010
    });
    expect(visibleRange(0, 400, 0)).toEqual({ start: 0, end: 0 });
  });
});

describe('logsDownloadUrl', () => {
  it('has the filters, the xsrf cookie and the token, never a cursor', () => {
    document.cookie = '_xsrf=2|abc|def|123';
    const url = logsDownloadUrl(
      'abc123def456',
      {
        node: 1,
        attempt: null,
        levels: ['error'],
        q: 'nan',
        since: null,
        until: null
      },
      {
        baseUrl: 'http://localhost:8888/user/alice/',
        token: 'secret'
      } as any
    );
    const parsed = new URL(url);
    expect(parsed.pathname).toBe(
      '/user/alice/air/api/workloads/abc123def456/logs/download'
    );
    expect(Object.fromEntries(parsed.searchParams)).toEqual({
      node: '1',
      level: 'error',
      q: 'nan',
      _xsrf: '2|abc|def|123',
      token: 'secret'
    });
    document.cookie = '_xsrf=; expires=Thu, 01 Jan 1970 00:00:00 GMT';
  });
});

describe('LogsView', () => {
  let server: FakeLogsServer;
  let model: LogsModel;
  let view: LogsView;
  let copied: string[];

  const { q, all, text } = finders(() => view.node);
  const rows = () => all('.jp-air-logs-row');

  /** Give the viewport a layout: jsdom has none. */
  function layout(viewport: HTMLElement): void {
    Object.defineProperty(viewport, 'clientHeight', {
      configurable: true,
      get: () => VIEWPORT_HEIGHT
    });
    Object.defineProperty(viewport, 'scrollHeight', {
      configurable: true,
      get: () => model.lines.length * ROW_HEIGHT
    });
  }

  /** Scroll as the user does: a scroll event, the frame it schedules. */
  async function scrollTo(top: number): Promise<void> {
    view.viewport.scrollTop = top;
    view.viewport.dispatchEvent(new Event('scroll'));
    await advance(20);
  }

  function create(options: Partial<LogsModel.IOptions> = {}): void {
    model = new LogsModel({
      jobId: 'abc123def456',
      fetchLogs: server.fetchLogs,
      fetchJob: async () => runningJob('abc123def456'),
      pageSize: 1000,
      maxLines: 50_000,
      ...options
    });
    view = new LogsView({
      model,
      copyText: async t => {
        copied.push(t);
      },
      downloadUrl: filters =>
        `/air/api/workloads/abc123def456/logs/download?q=${filters.q}&node=${filters.node}`
    });
    layout(view.viewport);
  }

  async function open(): Promise<void> {
    Widget.attach(view, document.body);
    await advance(0);
    await advance(20);
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_S * 1000 });
    copied = [];
  });

  afterEach(() => {
    view.dispose();
    model.dispose();
    jest.useRealTimers();
  });

  it('renders only the rows on screen, at the bottom first', async () => {
    server = new FakeLogsServer(5000);
    create();
    await open();
    expect(view.node.dataset.state).toBe('lines');
    expect(model.lines).toHaveLength(1000);
    expect(q('.jp-air-logs-spacer').style.height).toBe(
      `${1000 * ROW_HEIGHT}px`
    );
    // 20 rows on screen + 10 above
    expect(view.renderedRows).toBeLessThanOrEqual(
      VIEWPORT_HEIGHT / ROW_HEIGHT + 20
    );
    expect(view.viewport.scrollTop).toBe(1000 * ROW_HEIGHT - VIEWPORT_HEIGHT);
    const shown = rows().map(
      r => r.querySelector('.jp-air-logs-text')!.textContent
    );
    expect(shown[shown.length - 1]).toBe('line 4999');

    await scrollTo(500 * ROW_HEIGHT);
    expect(view.renderedRows).toBeLessThanOrEqual(
      VIEWPORT_HEIGHT / ROW_HEIGHT + 20
    );
    expect(rows()[0].dataset.index).toBe('490');
    expect(rows()[10].querySelector('.jp-air-logs-text')!.textContent).toBe(
      'line 4500'
    );
    expect(q('.jp-air-logs-rows').style.transform).toBe(
      `translateY(${490 * ROW_HEIGHT}px)`
    );
  });

  it('shows hostile lines and ANSI codes as text', async () => {
    server = new FakeLogsServer(0);
    server.write([
      HOSTILE,
      {
        text: '\x1b[31mred\x1b[0m <b>bold?</b>',
        stream: 'stderr',
        level: 'warning'
      },
      {
        text: 'Traceback (most recent call last):',
        level: 'error',
        stream: 'stderr'
      }
    ]);
    create();
    await open();
    const [hostile, ansi, error] = rows();
    expect(hostile.querySelector('.jp-air-logs-text')!.textContent).toBe(
      HOSTILE
    );
    expect(view.node.querySelector('img')).toBeNull();
    expect(view.node.querySelector('b')).toBeNull();
    // the terminal's red, from the theme's palette (logs.css)
    const colored = ansi.querySelector<HTMLElement>('.jp-air-logs-text span')!;
    expect(colored.textContent).toBe('red');
    expect(colored.classList).toContain('jp-air-ansi-fg');
    expect(colored.style.getPropertyValue('--jp-air-ansi-fg')).toBe(
      'var(--jp-air-ansi-1)'
    );
    expect(ansi.querySelector('.jp-air-logs-text')!.textContent).toBe(
      'red <b>bold?</b>'
    );
    expect(ansi.textContent).not.toContain('\x1b');
    expect(ansi.dataset.stream).toBe('stderr');
    expect(ansi.querySelector('.jp-air-logs-stream')!.textContent).toBe('err');
    expect(ansi.querySelector('.jp-air-logs-level')!.textContent).toBe('WARN');
    expect(error.dataset.level).toBe('error');
    expect(error.querySelector('.jp-air-logs-level')!.textContent).toBe(
      'ERROR'
    );
    expect(
      hostile.querySelector('.jp-air-logs-text')!.getAttribute('title')
    ).toBe(HOSTILE);

    // a click shows the whole line, as text
    hostile.click();
    expect(q('.jp-air-logs-detail').hidden).toBe(false);
    expect(text('.jp-air-logs-detail-text')).toBe(HOSTILE);
    expect(view.node.querySelector('img')).toBeNull();
  });

  it('cuts very long lines, with the whole line in the tooltip', async () => {
    server = new FakeLogsServer(0);
    server.write(['x'.repeat(10_000)]);
    create();
    await open();
    const row = rows()[0].querySelector('.jp-air-logs-text')!;
    expect(row.textContent!.length).toBeLessThan(2100);
    expect(row.getAttribute('title')).toContain('10000 characters');
  });

  it('searches on the server and highlights the matches', async () => {
    server = new FakeLogsServer(0);
    server.write(['loss 0.5', 'acc 0.9', 'Loss is NaN', `${HOSTILE} loss`]);
    create();
    await open();
    const search = q<HTMLInputElement>('.jp-air-logs-search');
    search.value = 'loss';
    search.dispatchEvent(new Event('input'));
    await advance(100);
    expect(server.calls.filter(c => c.filters.q)).toHaveLength(0); // debounced
    await advance(400);
    const tail = server.calls[server.calls.length - 1];
    expect(tail.filters.q).toBe('loss');
    expect(tail.cursor.tail).toBe(true);
    await advance(20);
    expect(
      rows().map(r => r.querySelector('.jp-air-logs-text')!.textContent)
    ).toEqual(['loss 0.5', 'Loss is NaN', `${HOSTILE} loss`]);
    expect(all('mark.jp-air-logs-match').map(m => m.textContent)).toEqual([
      'loss',
      'Loss',
      'loss'
    ]);
    expect(view.node.querySelector('img')).toBeNull();
    expect(text('.jp-air-logs-summary')).toContain('3 lines matching');
    expect(
      q<HTMLAnchorElement>('.jp-air-logs-download').getAttribute('href')
    ).toContain('q=loss');

    // Enter searches at once; no match says so
    search.value = 'zzz';
    search.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    await advance(0);
    expect(view.node.dataset.state).toBe('empty');
    expect(text('.jp-air-logs-message-title')).toBe(
      'No lines match these filters'
    );
  });

  it('filters by level, node and attempt', async () => {
    server = new FakeLogsServer(3);
    server.attempts = 2;
    create();
    await open();
    const toggle = (level: string) =>
      q<HTMLButtonElement>(`.jp-air-logs-level-toggle[data-level="${level}"]`);
    expect(toggle('info').getAttribute('aria-pressed')).toBe('true');
    toggle('info').click();
    await advance(0);
    expect(toggle('info').getAttribute('aria-pressed')).toBe('false');
    expect(server.calls[server.calls.length - 1].filters.levels).toEqual([
      'warning',
      'error'
    ]);

    const node = q<HTMLSelectElement>('.jp-air-logs-node');
    expect(node.hidden).toBe(false); // 2 nodes
    expect(optionLabels(node)).toEqual(['Node 0', 'Node 1']);
    await choose(node, '1');
    expect(server.calls[server.calls.length - 1].filters.node).toBe(1);

    const attemptSelect = q<HTMLSelectElement>('.jp-air-logs-attempt-select');
    expect(optionLabels(attemptSelect)).toEqual([
      'Latest attempt (2)',
      'Attempt 1',
      'Attempt 2'
    ]);
    await choose(attemptSelect, '1');
    expect(server.calls[server.calls.length - 1].filters).toMatchObject({
      node: 1,
      attempt: 1,
      levels: ['warning', 'error']
    });

    const since = q<HTMLInputElement>('.jp-air-logs-since-input');
    await choose(since, secondsToInput(T0_S + 60));
    expect(server.calls[server.calls.length - 1].filters.since).toBe(T0_S + 60);
  });

  it('pauses following when scrolled up, and resumes at the bottom or with Resume', async () => {
    server = new FakeLogsServer(100);
    server.status = 'RUNNING';
    create();
    await open();
    const bottom = () => model.lines.length * ROW_HEIGHT - VIEWPORT_HEIGHT;
    expect(view.viewport.scrollTop).toBe(bottom());
    expect(text('.jp-air-logs-follow')).toBe('Following new lines');

    // new lines: shown, still at the bottom
    server.write(['epoch 1']);
    await advance(20);
    expect(model.lines).toHaveLength(101);
    expect(view.viewport.scrollTop).toBe(bottom());
    expect(rows().pop()!.querySelector('.jp-air-logs-text')!.textContent).toBe(
      'epoch 1'
    );

    // the user scrolls up
    await scrollTo(bottom() - 200);
    expect(model.paused).toBe(true);
    expect(view.node.dataset.paused).toBe('true');
    expect(text('.jp-air-logs-follow')).toBe(
      'Following paused — scroll to the bottom or click Resume'
    );
    expect(q('.jp-air-logs-resume').hidden).toBe(false);
    const top = view.viewport.scrollTop;
    server.write(['epoch 2']);
    await advance(20);
    expect(model.lines).toHaveLength(101); // not read while paused
    expect(view.viewport.scrollTop).toBe(top);

    // back at the bottom: following again, the line written meanwhile arrives
    await scrollTo(bottom());
    await advance(20);
    expect(model.paused).toBe(false);
    expect(model.lines).toHaveLength(102);
    expect(view.viewport.scrollTop).toBe(bottom());
    expect(text('.jp-air-logs-follow')).toBe('Following new lines');

    // up again, then the Resume button
    await scrollTo(0);
    expect(model.paused).toBe(true);
    server.write(['epoch 3']);
    q<HTMLButtonElement>('.jp-air-logs-resume').click();
    await advance(20);
    expect(model.paused).toBe(false);
    expect(model.lines).toHaveLength(103);
    expect(view.viewport.scrollTop).toBe(bottom());
  });

  it('stops the long-poll when hidden', async () => {
    server = new FakeLogsServer(10);
    server.status = 'RUNNING';
    create();
    await open();
    expect(server.waiting).toBe(1);
    view.hide();
    await advance(0);
    expect(server.waiting).toBe(0);
    const count = server.calls.length;
    await advance(120_000);
    expect(server.calls).toHaveLength(count);
    view.show();
    await advance(0);
    expect(server.waiting).toBe(1);
  });

  it('loads older lines when scrolled to the top, keeping the lines in place', async () => {
    server = new FakeLogsServer(3000);
    create();
    await open();
    await scrollTo(2 * ROW_HEIGHT);
    await advance(0);
    await advance(20);
    expect(model.lines).toHaveLength(2000);
    expect(view.viewport.scrollTop).toBe(1002 * ROW_HEIGHT);
    // the row that was on screen (index 2) is still there, now index 1002
    expect(rows().find(r => r.dataset.index === '1002')!.textContent).toContain(
      'line 2002'
    );
  });

  it("says when the user may not read the logs, with the server's message", async () => {
    server = new FakeLogsServer(10);
    server.error = FakeLogsServer.forbidden();
    create();
    await open();
    expect(view.node.dataset.state).toBe('forbidden');
    expect(text('.jp-air-logs-message-title')).toBe(
      "You don't have access to these logs"
    );
    expect(text('.jp-air-logs-message-detail')).toBe(
      "You don't have access to these logs. Ask your administrator for the air-logs permission."
    );
    expect(q('.jp-air-logs-viewport').hidden).toBe(true);
    expect(q('.jp-air-logs-download').hidden).toBe(true);
  });

  it('says when the logs were purged', async () => {
    server = new FakeLogsServer(0);
    server.purged = true;
    create();
    await open();
    expect(text('.jp-air-logs-message-title')).toBe(
      'These logs were removed by the retention policy'
    );
    expect(text('.jp-air-logs-message-detail')).toContain(
      'MLflow run keeps its logs'
    );
  });

  it('says when a running job has written nothing yet', async () => {
    server = new FakeLogsServer(0);
    server.status = 'RUNNING';
    create();
    await open();
    expect(text('.jp-air-logs-message-title')).toBe(
      'No output yet: new lines appear here as the job writes them'
    );
    server.write(['first']);
    await advance(20);
    expect(view.node.dataset.state).toBe('lines');
    expect(rows()).toHaveLength(1);
  });

  it('copies the loaded lines as text', async () => {
    server = new FakeLogsServer(0);
    server.write([
      '\x1b[32mok\x1b[0m',
      { text: 'bad', level: 'error', stream: 'stderr' }
    ]);
    create();
    await open();
    q<HTMLButtonElement>('.jp-air-logs-copy').click();
    await advance(0);
    expect(copied).toEqual([
      `INFO  ${model.lines[0].t} out ok\nERROR ${model.lines[1].t} err bad\n`
    ]);
    expect(text('.jp-air-logs-notice')).toBe('Copied 2 lines');
    await advance(3000);
    expect(text('.jp-air-logs-notice')).toBe('');
  });

  it('records a performance measure per rendering', async () => {
    const had = 'measure' in performance;
    const measure = jest.fn();
    (performance as any).measure = measure; // jsdom has no User Timing
    try {
      server = new FakeLogsServer(10);
      create();
      await open();
      expect(
        measure.mock.calls.some(c => c[0] === 'jupyter-air:logs-render')
      ).toBe(true);
      expect(measure.mock.calls[0][1]).toEqual({
        start: expect.any(Number),
        duration: expect.any(Number)
      });
    } finally {
      if (!had) {
        delete (performance as any).measure;
      }
    }
  });
});
