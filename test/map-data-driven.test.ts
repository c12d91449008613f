/**
 * Data-driven cases of the map (runner: the engine's test/data-driven.ts), one session of one memory-only
 * `OffHeapMap` per file in testdata/map/, each case checked against `OffHeapMap.dump` and the map's answers. Commands:
 *
 *   new [keys=bytes] [struct=name:type,...] [capacity=N]   a fresh map (the previous one is closed)
 *   set <key> <json>                             one set per line (more lines: `<key> <json>` each); prints ok
 *   set-range <prefix> <from> <to> [json]        sets prefix+i for i in [from, to) to json (default i); prints size
 *   set-bytes <key> <hex> | set-bytes <key> zeros=N    setBytes; prints ok
 *   get <key>...                                 `key: json` per key (undefined when absent)
 *   get-bytes <key>                              the stored bytes in hex
 *   delete <key>...                              `key: true|false` per key
 *   delete-range <prefix> <from> <to>            deletes prefix+i for i in [from, to); prints how many were there
 *   keys                                         the keys in index order, one a line
 *   range [prefix=] [gte=] [gt=] [lt=] [limit=]  one page: `key hex-bytes` a line, then `more=true|false`
 *   view <key> [field=value ...]                 struct maps: writes the fields in place, then prints the record
 *   batch                                        one map.batch() of the input lines, written: `set <key> <json>`,
 *                                                `delete <key>`, `meta <name> <hex>`, `unmeta <name>`; prints the
 *                                                number of operations (a refused line: the error, nothing written)
 *   meta                                         the metadata: `name hex-bytes` a line
 *   stats                                        entries, index and arena figures
 *   dump                                         map.dump()
 *
 * A key is text, or hex for a bytes map; `repeat(c,n)` is c repeated n times. Errors print as `error: CODE: ...`.
 * `HEAPLESS_REWRITE=1 npx vitest run test/map-data-driven.test.ts` rewrites the expected outputs (review the diff).
 */
import { readdirSync } from 'node:fs';
import { type FieldType, OffHeapMap, struct } from '@heapless/offheap';
import { afterAll, describe, expect, it } from 'vitest';
import { type DataCase, runDataFile } from '../packages/engine/test/data-driven.js';

const DIR = new URL('./testdata/map/', import.meta.url);

type AnyMap = OffHeapMap<string | Uint8Array, unknown>;

/** The session of one file: its map and how its keys are written. */
class Session {
  map: AnyMap = new OffHeapMap({ threads: 1 });
  bytes = false;

  async close(): Promise<void> {
    await this.map.close();
  }

  key(word: string): string | Uint8Array {
    const m = /^repeat\((.),(\d+)\)$/.exec(word);
    const text = m === null ? word : m[1]!.repeat(Number(m[2]));
    return this.bytes ? Buffer.from(text, 'hex') : text;
  }

  keyText(k: string | Uint8Array): string {
    return typeof k === 'string' ? k : Buffer.from(k).toString('hex');
  }

  async run(c: DataCase): Promise<string> {
    const m = this.map;
    const a = c.args;
    switch (c.cmd) {
      case 'new': {
        await m.close();
        this.bytes = c.kv.keys === 'bytes';
        const fields: Record<string, FieldType> = {};
        for (const f of (c.kv.struct ?? '').split(',').filter((x) => x !== '')) {
          const [name, type] = f.split(':');
          fields[name!] = type as FieldType;
        }
        this.map = new OffHeapMap({
          threads: 1,
          keys: this.bytes ? 'bytes' : 'string',
          capacity: c.kv.capacity === undefined ? undefined : Number(c.kv.capacity),
          struct: c.kv.struct === undefined ? undefined : struct(fields),
        });
        return 'ok';
      }
      case 'set': {
        const lines = [a.join(' '), ...(c.input === '' ? [] : c.input.split('\n'))];
        for (const line of lines) {
          const sp = line.indexOf(' ');
          m.set(this.key(line.slice(0, sp)), JSON.parse(line.slice(sp + 1)));
        }
        return 'ok';
      }
      case 'set-range': {
        const [prefix, from, to, json] = a;
        for (let i = Number(from); i < Number(to); i++)
          m.set(this.key(`${prefix}${i}`), json === undefined ? i : JSON.parse(json));
        return `size=${m.size}`;
      }
      case 'set-bytes': {
        const bytes = c.kv.zeros === undefined ? Buffer.from(a[1]!, 'hex') : new Uint8Array(Number(c.kv.zeros));
        m.setBytes(this.key(a[0]!), bytes);
        return 'ok';
      }
      case 'get':
        return a.map((k) => `${k}: ${show(m.get(this.key(k)))}`).join('\n');
      case 'get-bytes': {
        const b = m.getBytes(this.key(a[0]!));
        return b === undefined ? 'undefined' : Buffer.from(b).toString('hex');
      }
      case 'delete':
        return a.map((k) => `${k}: ${m.delete(this.key(k))}`).join('\n');
      case 'delete-range': {
        let n = 0;
        for (let i = Number(a[1]); i < Number(a[2]); i++) if (m.delete(this.key(`${a[0]}${i}`))) n++;
        return `deleted=${n} size=${m.size}`;
      }
      case 'keys':
        return Array.from(m.keys(), (k) => this.keyText(k)).join('\n');
      case 'range': {
        const opt: Record<string, unknown> = {};
        for (const b of ['prefix', 'gte', 'gt', 'lt'] as const) if (c.kv[b] !== undefined) opt[b] = this.key(c.kv[b]!);
        if (c.kv.limit !== undefined) opt.limit = Number(c.kv.limit);
        const page = m.range(opt);
        const lines = page.entries.map(([k, v]) => `${this.keyText(k)} ${Buffer.from(v).toString('hex')}`);
        return [...lines, `more=${page.more}`].join('\n');
      }
      case 'view': {
        const v = m.view() as unknown as Record<string, unknown>;
        if (!m.locate(this.key(a[0]!), v as never)) return 'absent';
        for (const [name, value] of Object.entries(c.kv)) v[name] = JSON.parse(value);
        return show((v as unknown as { toObject(): unknown }).toObject());
      }
      case 'batch': {
        const b = m.batch();
        for (const line of c.input.split('\n').filter((l) => l !== '')) {
          const [op, key, ...rest] = line.split(' ');
          if (op === 'set') b.set(this.key(key!), JSON.parse(rest.join(' ')));
          else if (op === 'delete') b.delete(this.key(key!));
          else if (op === 'meta') b.setMeta(key!, Buffer.from(rest[0] ?? '', 'hex'));
          else if (op === 'unmeta') b.deleteMeta(key!);
          else throw new Error(`${c.pos}: unknown batch operation ${op}`);
        }
        const n = b.length;
        await b.write();
        return `ops=${n} size=${m.size}`;
      }
      case 'meta':
        return m.meta
          .names()
          .map((name) => `${name} ${Buffer.from(m.meta.get(name)!).toString('hex')}`)
          .join('\n');
      case 'stats': {
        const s = m.stats();
        return [
          `entries=${s.entries} indexCapacity=${s.indexCapacity} tombstones=${s.tombstones} growing=${s.growing}`,
          `live=${s.liveBytes} payload=${s.payloadBytes} garbage=${s.garbageBytes} segments=${s.segments}`,
        ].join('\n');
      }
      case 'dump':
        return m.dump();
      default:
        throw new Error(`${c.pos}: unknown command ${c.cmd}`);
    }
  }
}

function show(v: unknown): string {
  return v === undefined ? 'undefined' : JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
}

const sessions: Session[] = [];
afterAll(async () => {
  for (const s of sessions) await s.close();
});

describe('map data-driven cases', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.txt'));
  it('has case files', () => expect(files.length).toBeGreaterThan(0));
  for (const f of files) {
    it(f, async () => {
      const s = new Session();
      sessions.push(s);
      expect(await runDataFile(new URL(f, DIR).pathname, (c) => s.run(c))).toBe('');
    });
  }
});
