// The codecs of the `codec` benchmark agree with themselves across two instances, as its loopback sender and
// receiver need: every varied record comes back equal (the struct's flattened), and the struct and msgpackr records
// are as small as the benchmark says (seed 003's ~70 bytes).
import { describe, expect, it } from 'vitest';
import { codec } from './definition.js';
import { checkRoundTrip, codecOf, priceUpdates } from './price-update.js';

const records = priceUpdates(256);

describe('codec benchmark codecs', () => {
  it.each(codec.systems)('%s round-trips every record between a sender and a receiver made apart', (system) => {
    const sender = codecOf(system, records[0]!)!;
    const receiver = codecOf(system, records[0]!)!;
    expect(() => checkRoundTrip(system, sender, receiver, records)).not.toThrow();
  });

  it('a struct record is 64 bytes and a msgpackr record under 70; JSON is larger than both', () => {
    const size = (system: string) => codecOf(system, records[0]!)!.encode(records[7]!).length;
    expect(size('struct')).toBe(64);
    expect(size('msgpackr-records')).toBeLessThan(70);
    expect(size('json')).toBeGreaterThan(size('msgpackr-records'));
  });

  it('an unknown system has no codec', () => {
    expect(codecOf('protobuf', records[0]!)).toBeUndefined();
  });
});
