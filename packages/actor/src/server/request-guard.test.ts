import { describe, expect, it } from 'vitest';
import { RequestGuard } from './request-guard.js';

describe('RequestGuard', () => {
  const guard = new RequestGuard(['heapless.internal', 'API.Example'], ['https://app.example']);

  it('trusts IP addresses, localhost and the configured names, with or without a port', () => {
    for (const host of [
      '127.0.0.1',
      '127.0.0.1:7070',
      '[::1]:7070',
      '10.1.2.3',
      'localhost:7070',
      'LOCALHOST',
      'app.localhost',
      'heapless.internal:443',
      'api.example',
    ]) {
      expect(guard.check(host, undefined), host).toEqual({ ok: true });
    }
  });

  it('refuses any other Host, a malformed one or none, as HOST_NOT_ALLOWED (DNS rebinding)', () => {
    for (const host of [
      undefined,
      '',
      ':7070',
      '[::1',
      'evil.example',
      'localhost.evil.example',
      'heapless.internal.x',
    ]) {
      expect(guard.check(host, undefined), String(host)).toEqual({ ok: false, reason: 'HOST_NOT_ALLOWED' });
    }
  });

  it('lets programs (no Origin) and allowed pages through, refuses other pages as ORIGIN_NOT_ALLOWED', () => {
    expect(guard.check('127.0.0.1', 'https://app.example')).toEqual({ ok: true });
    expect(guard.check('127.0.0.1', 'https://app.example:8443')).toEqual({ ok: false, reason: 'ORIGIN_NOT_ALLOWED' });
    expect(guard.check('127.0.0.1', 'null')).toEqual({ ok: false, reason: 'ORIGIN_NOT_ALLOWED' });
    // The Host is judged first: a rebound name is refused whatever page sent it.
    expect(guard.check('evil.example', 'https://app.example')).toEqual({ ok: false, reason: 'HOST_NOT_ALLOWED' });
    const any = new RequestGuard([], ['*']);
    expect(any.check('127.0.0.1', 'https://anything.example')).toEqual({ ok: true });
    expect(any.check('evil.example', 'https://anything.example')).toEqual({ ok: false, reason: 'HOST_NOT_ALLOWED' });
  });
});
