// Throwaway comparison (not committed).

import { rmSync } from 'node:fs';
import { Engine } from '@heapless/engine';
import { ClassicLevel } from 'classic-level';

const N = Number(process.env.N ?? 200000);
const which = process.argv[2] ?? 'both';
function t(label, ops, fn) {
  return async () => {
    const s = performance.now();
    await fn();
    const ms = performance.now() - s;
    console.log(`${label.padEnd(28)} ${((ops / ms) * 1000).toFixed(0).padStart(10)} ops/s`);
  };
}
async function runEngine() {
  const dir = '/tmp/hl/bench-engine';
  rmSync(dir, { recursive: true, force: true });
  const db = await Engine.open(dir);
  await t('engine put awaited', N, async () => {
    for (let i = 0; i < N; i++) await db.put(`key${i}`, `value${i}`);
  })();
  await t('engine get random', N, async () => {
    for (let i = 0; i < N; i++) {
      const k = (i * 7919) % N;
      db.getSync(`key${k}`);
    }
  })();
  await t('engine get missing', N, async () => {
    for (let i = 0; i < N; i++) db.getSync(`nokey${i}`);
  })();
  await t('engine scan nextv', N, async () => {
    const it = db.iterator();
    let n = 0;
    for (;;) {
      const b = await it.nextv(1000);
      if (!b.length) break;
      n += b.length;
    }
    await it.close();
  })();
  await t('engine batch 1000', N, async () => {
    for (let i = 0; i < N; i += 1000) {
      const b = db.batch();
      for (let j = i; j < i + 1000; j++) b.put(`bkey${j}`, `value${j}`);
      await b.write();
    }
  })();
  await t('engine delete', N, async () => {
    for (let i = 0; i < N; i++) await db.delete(`key${i}`);
  })();
  console.log(db.stats().levels.slice(0, 4), db.stats().flushes, db.stats().compactions, db.stats().writeStalls);
  await db.close();
}
async function runClassic() {
  const dir = '/tmp/hl/bench-classic';
  rmSync(dir, { recursive: true, force: true });
  const db = new ClassicLevel(dir);
  await db.open();
  await t('classic put awaited', N, async () => {
    for (let i = 0; i < N; i++) await db.put(`key${i}`, `value${i}`);
  })();
  await t('classic getSync random', N, async () => {
    for (let i = 0; i < N; i++) {
      const k = (i * 7919) % N;
      db.getSync(`key${k}`);
    }
  })();
  await t('classic getSync missing', N, async () => {
    for (let i = 0; i < N; i++) db.getSync(`nokey${i}`);
  })();
  await t('classic scan nextv', N, async () => {
    const it = db.iterator();
    for (;;) {
      const b = await it.nextv(1000);
      if (!b.length) break;
    }
    await it.close();
  })();
  await t('classic batch 1000', N, async () => {
    for (let i = 0; i < N; i += 1000) {
      const b = db.batch();
      for (let j = i; j < i + 1000; j++) b.put(`bkey${j}`, `value${j}`);
      await b.write();
    }
  })();
  await t('classic delete', N, async () => {
    for (let i = 0; i < N; i++) await db.del(`key${i}`);
  })();
  await db.close();
}
if (which !== 'classic') await runEngine();
if (which !== 'engine') await runClassic();
