import { describe, expect, it } from 'vitest';
import { digest, isLoopback, tokenMatches, upgradeToken } from './auth.js';

describe('auth', () => {
  it('matches only the same token, whatever the lengths', () => {
    const d = digest('s3cret');
    expect(tokenMatches(d, 's3cret')).toBe(true);
    expect(tokenMatches(d, 's3cre')).toBe(false);
    expect(tokenMatches(d, 's3cret-and-more')).toBe(false);
    expect(tokenMatches(d, undefined)).toBe(false);
  });
  it('finds the token in the header, a subprotocol or (only when allowed) the query, in that order', () => {
    const u = new URL('ws://h/v1/ws?token=q');
    expect(upgradeToken('Bearer h', 'heapless.v1', u, true)).toBe('h');
    // base64url of 'p' is 'cA'
    expect(upgradeToken(undefined, 'heapless.v1, heapless.token.cA', u, true)).toBe('p');
    expect(upgradeToken(undefined, undefined, u, true)).toBe('q');
    expect(upgradeToken(undefined, undefined, u, false)).toBeUndefined();
    expect(upgradeToken(undefined, undefined, new URL('ws://h/v1/ws'), true)).toBeUndefined();
  });
  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost']) expect(isLoopback(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.com']) expect(isLoopback(h), h).toBe(false);
  });
});
