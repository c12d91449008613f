import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RingQueue } from './ring-queue.js';

describe('RingQueue', () => {
  it('behaves like an array used as a FIFO, across growth and wrap-around', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer(), fc.constant(null))), (ops) => {
        const q = new RingQueue<number>();
        const model: number[] = [];
        for (const op of ops) {
          if (op === null) expect(q.shift()).toBe(model.shift());
          else {
            q.push(op);
            model.push(op);
          }
          expect(q.length).toBe(model.length);
          expect(q.peek()).toBe(model[0]);
        }
      }),
    );
  });
});
