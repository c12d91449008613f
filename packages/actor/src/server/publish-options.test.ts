import { MAX_TIMER_MS } from '@heapless/engine';
import { describe, expect, it } from 'vitest';
import { type PublishOptions, resolvePublishOptions } from './publish-options.js';

const TIMEOUTS = ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'heartbeatMs'] as const;

describe('resolvePublishOptions timeouts', () => {
  it('takes the longest delay a Node timer takes', () => {
    const all = Object.fromEntries(TIMEOUTS.map((name) => [name, MAX_TIMER_MS])) as PublishOptions;
    const o = resolvePublishOptions(all, []);
    expect([o.server.headersTimeoutMs, o.server.requestTimeoutMs, o.server.keepAliveTimeoutMs, o.heartbeatMs]).toEqual([
      MAX_TIMER_MS,
      MAX_TIMER_MS,
      MAX_TIMER_MS,
      MAX_TIMER_MS,
    ]);
  });

  for (const name of TIMEOUTS) {
    it(`refuses a ${name} that a timer would clamp to 1 ms, naming it`, () => {
      // requestTimeoutMs must be at least headersTimeoutMs: keep that true, so that only the range is at fault.
      const tooLong = MAX_TIMER_MS + 1;
      const options = {
        headersTimeoutMs: 1,
        requestTimeoutMs: name === 'headersTimeoutMs' ? tooLong : 1,
        [name]: tooLong,
      };
      expect(() => resolvePublishOptions(options, [])).toThrow(
        expect.objectContaining({
          code: 'HEAPLESS_ERR_ACTOR_INVALID_OPTION',
          message: `${name} must be an integer from 1 to ${MAX_TIMER_MS} ms, got ${tooLong}`,
        }),
      );
    });
  }
});

describe('resolvePublishOptions tcp', () => {
  it('serves TCP on the HTTP host unless told another, and none without the option', () => {
    expect(resolvePublishOptions({}, []).tcp).toBe(null);
    expect(resolvePublishOptions({ host: '::1', tcp: {} }, []).tcp).toEqual({ host: '::1', port: 0 });
    expect(resolvePublishOptions({ tcp: { port: 7071, host: 'localhost' } }, []).tcp).toEqual({
      host: 'localhost',
      port: 7071,
    });
  });

  it('holds a TCP host off loopback to the bind rule of the HTTP host', () => {
    const bind = expect.objectContaining({ code: 'HEAPLESS_ERR_ACTOR_INSECURE_BIND' });
    expect(() => resolvePublishOptions({ tcp: { host: '0.0.0.0' } }, [])).toThrow(bind);
    expect(() => resolvePublishOptions({ token: 't', tcp: { host: '0.0.0.0' } }, [])).toThrow(bind);
    expect(resolvePublishOptions({ token: 't', insecure: true, tcp: { host: '0.0.0.0' } }, []).tcp).toEqual({
      host: '0.0.0.0',
      port: 0,
    });
  });

  it('refuses a port out of range, naming it', () => {
    expect(() => resolvePublishOptions({ tcp: { port: 65536 } }, [])).toThrow(
      expect.objectContaining({
        code: 'HEAPLESS_ERR_ACTOR_INVALID_OPTION',
        message: expect.stringContaining('tcp.port'),
      }),
    );
  });
});
