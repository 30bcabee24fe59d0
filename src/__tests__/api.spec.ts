import { ServerConnection } from '@jupyterlab/services';

import { APIError, apiURL, requestAPI } from '../api';
import { fetchGpu } from '../gpu/api';
import { stubFetch } from './helpers';

/** The error a call fails with (fails the test if it succeeds). */
async function failure(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (error) {
    return error as APIError;
  }
  throw new Error('the call did not fail');
}

describe('requestAPI', () => {
  let requests: Request[];
  let answer: () => Response | Promise<Response>;
  let settings: ServerConnection.ISettings;

  beforeEach(() => {
    requests = [];
    answer = () => new Response(JSON.stringify({ ok: true }), { status: 200 });
    settings = ServerConnection.makeSettings({
      // JupyterHub-style prefix
      baseUrl: 'http://localhost:8888/user/ada/',
      token: 'secret',
      fetch: async (request: RequestInfo) => {
        requests.push(request as Request);
        return answer();
      }
    } as Partial<ServerConnection.ISettings>);
  });

  it('builds URLs under the base URL and keeps the query', () => {
    expect(apiURL('gpu?since=12.5', settings)).toBe(
      'http://localhost:8888/user/ada/air/api/gpu?since=12.5'
    );
    expect(apiURL('gpu/refresh', settings)).toBe(
      'http://localhost:8888/user/ada/air/api/gpu/refresh'
    );
  });

  it('sends the token and decodes JSON', async () => {
    const body = await requestAPI<{ ok: boolean }>('gpu', {}, settings);
    expect(body).toEqual({ ok: true });
    expect(requests).toHaveLength(1);
    expect(requests[0].url).toMatch(
      /^http:\/\/localhost:8888\/user\/ada\/air\/api\/gpu\b/
    );
    expect(requests[0].headers.get('Authorization')).toBe('token secret');
  });

  it('throws the server message with the status on a non-2xx answer', async () => {
    answer = () =>
      new Response(
        JSON.stringify({
          message: "'since' must be a unix time in seconds (got 'x')",
          reason: null
        }),
        { status: 400, statusText: 'Bad Request' }
      );
    const error = await failure(requestAPI('gpu?since=x', {}, settings));
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(400);
    expect(error.message).toBe(
      "'since' must be a unix time in seconds (got 'x')"
    );
  });

  it('falls back to the status line when the error body is not JSON', async () => {
    answer = () =>
      new Response('<html>Bad Gateway</html>', {
        status: 502,
        statusText: 'Bad Gateway'
      });
    const error = await failure(requestAPI('gpu', {}, settings));
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(502);
    expect(error.message).toBe('Request failed (502 Bad Gateway)');
  });

  it('reports an unreachable server as status 0', async () => {
    answer = () => Promise.reject(new TypeError('Failed to fetch'));
    const error = await failure(requestAPI('gpu', {}, settings));
    expect(error).toBeInstanceOf(APIError);
    expect(error.status).toBe(0);
    expect(error.message).toContain('Failed to fetch');
  });
});

describe('fetchGpu', () => {
  const requests = stubFetch('{"backend":"none"}');

  it('GETs air/api/gpu, with since for a delta', async () => {
    await fetchGpu({ since: null, refresh: false });
    await fetchGpu({ since: 1764409995.001, refresh: false });
    expect(requests[0].method).toBe('GET');
    expect(new URL(requests[0].url).pathname).toMatch(/\/air\/api\/gpu$/);
    expect(new URL(requests[0].url).searchParams.has('since')).toBe(false);
    expect(new URL(requests[1].url).searchParams.get('since')).toBe(
      '1764409995.001'
    );
  });

  it('POSTs air/api/gpu/refresh', async () => {
    await fetchGpu({ since: 5, refresh: true });
    expect(requests[0].method).toBe('POST');
    expect(new URL(requests[0].url).pathname).toMatch(
      /\/air\/api\/gpu\/refresh$/
    );
    expect(new URL(requests[0].url).searchParams.get('since')).toBe('5');
  });
});
