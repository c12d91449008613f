import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { forEachUpdate } from '../write/updates-since.js';
import { Engine } from './engine.js';

const dec = new TextDecoder();
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-on-commit-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('follow', () => {
  it('tells every applied batch in commit order, the same writes updatesSince reads back', async () => {
    const db = await Engine.open(dir);
    const seen: string[] = [];
    let next = db.lastSequence + 1;
    const follower = db.follow(() => {
      const ok = follower.read((seq, key, value) => {
        expect(seq).toBe(next);
        next++;
        seen.push(`${seq} ${dec.decode(key)}=${value === undefined ? '-' : dec.decode(value)}`);
      });
      expect(ok).toBe(true);
    });
    const off = () => follower.close();
    const start = db.lastSequence;
    await db.put('a', '1');
    void db.write([
      { type: 'put', key: 'b', value: '2' },
      { type: 'del', key: 'a' },
    ]);
    const b = db.batch().put('c', '3');
    await b.write();
    expect(next - 1).toBe(db.lastSequence);
    off();
    off(); // idempotent
    await db.put('d', '4');
    expect(seen).toEqual([`${start + 1} a=1`, `${start + 2} b=2`, `${start + 3} a=-`, `${start + 4} c=3`]);
    const back: string[] = [];
    const r = await db.updatesSince(start);
    if (!r.ok) throw new Error(r.reason);
    forEachUpdate(r.batches, start, (seq, key, value) => {
      back.push(`${seq} ${dec.decode(key)}=${value === undefined ? '-' : dec.decode(value)}`);
    });
    expect(back.slice(0, 4)).toEqual(seen);
    await db.close();
    expect(() => db.follow(() => {})).toThrow(/closed/i);
  });

  it('does not fail a write whose listener throws', async () => {
    const db = await Engine.open(dir);
    const thrown = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    const follower = db.follow(() => {
      throw new Error('listener broke');
    });
    const off = () => follower.close();
    await db.put('k', 'v');
    expect(String(await thrown)).toMatch(/listener broke/);
    off();
    expect(dec.decode(db.getSync('k'))).toBe('v');
    await db.close();
  });
});
