import { describe, expect, it } from 'vitest';
import { WakeablePause } from './pause.js';

describe('WakeablePause', () => {
  it('ends a long sleep at wake(), leaves no timer, and a wake with no sleep changes nothing', async () => {
    const pause = new WakeablePause();
    pause.wake(); // nothing to end
    const order: string[] = [];
    const long = pause.sleep(60_000).then(() => order.push('woken'));
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual([]);
    pause.wake();
    await long;
    expect(order).toEqual(['woken']);
    // The cleared timer would keep the event loop alive; a short sleep still ends on its own.
    await pause.sleep(5);
    pause.wake(); // after the sleep ended: a no-op
  });
});
