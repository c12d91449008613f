/**
 * The record of seed 003's encoding table: a price update carrying the instrument it quotes (an object inside the
 * object), about 70 bytes once encoded, and the five codecs the benchmark compares, each behind one interface.
 *
 * Each codec encodes into bytes (what a sender puts on a wire), with its fastest API that does so: the struct layout
 * and msgpackr write into a buffer they reuse and hand out a view of it (valid until the next encode: a sender that
 * keeps the bytes copies them, as the loopback phases do), JSON and v8 return new bytes. Decoding returns a plain
 * object. A struct layout has no nesting: its record is the same data with the instrument's fields flattened
 * (`instrumentId`, `symbol`, ...), which is how a struct user lays such a record out.
 */
import { isDeepStrictEqual } from 'node:util';
import { deserialize, serialize } from 'node:v8';
import { struct, utf8 } from '@heapless/offheap';
import { Packr } from 'msgpackr';

export interface Instrument {
  id: number;
  symbol: string;
  venue: string;
  tickSize: number;
}

export interface PriceUpdate {
  instrument: Instrument;
  bid: number;
  ask: number;
  bidSize: number;
  askSize: number;
  time: number;
  sequence: number;
}

/** Encodes a record to bytes and decodes bytes to a record. */
export interface Codec {
  /** Bytes of `value`; a view that the next call may overwrite when {@link reusesBuffer}. */
  encode(value: PriceUpdate): Uint8Array;
  decode(bytes: Uint8Array): unknown;
  /** Whether {@link encode}'s bytes are a view of a buffer the codec reuses. */
  readonly reusesBuffer: boolean;
}

const SYMBOLS = ['EUR/USD', 'USD/JPY', 'GBP/USD', 'AAPL', 'MSFT', 'BRENT-F26', 'BUND-Z26', 'ES-Z26'];
const VENUES = ['LSE', 'XET', 'CME', 'EBS'];

/** `count` varied records (prices, sizes, times and instruments all differ), made from a fixed seed. */
export function priceUpdates(count: number): PriceUpdate[] {
  const out: PriceUpdate[] = [];
  let x = 0x2545f491;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  for (let i = 0; i < count; i++) {
    const mid = 1 + next() * 200;
    out.push({
      instrument: {
        id: 100_000 + (i % 5000),
        symbol: SYMBOLS[i % SYMBOLS.length]!,
        venue: VENUES[i % VENUES.length]!,
        tickSize: 0.0001,
      },
      bid: mid - 0.0002,
      ask: mid + 0.0002,
      bidSize: Math.floor(next() * 5_000_000),
      askSize: Math.floor(next() * 5_000_000),
      time: 1_796_000_000_000 + i * 3,
      sequence: i,
    });
  }
  return out;
}

const PriceLayout = struct({
  instrumentId: 'u32',
  symbol: utf8(11),
  venue: utf8(3),
  tickSize: 'f64',
  bid: 'f64',
  ask: 'f64',
  bidSize: 'u32',
  askSize: 'u32',
  time: 'f64',
  sequence: 'u32',
});

class StructCodec implements Codec {
  readonly reusesBuffer = true;
  readonly #out = new Uint8Array(PriceLayout.size);
  readonly #flat = {
    instrumentId: 0,
    symbol: '',
    venue: '',
    tickSize: 0,
    bid: 0,
    ask: 0,
    bidSize: 0,
    askSize: 0,
    time: 0,
    sequence: 0,
  };

  encode(v: PriceUpdate): Uint8Array {
    // A struct user's record is already flat; the copy into one reused object stands for that, and costs a few ns.
    const f = this.#flat;
    f.instrumentId = v.instrument.id;
    f.symbol = v.instrument.symbol;
    f.venue = v.instrument.venue;
    f.tickSize = v.instrument.tickSize;
    f.bid = v.bid;
    f.ask = v.ask;
    f.bidSize = v.bidSize;
    f.askSize = v.askSize;
    f.time = v.time;
    f.sequence = v.sequence;
    PriceLayout.encodeInto(f, this.#out, 0);
    return this.#out;
  }

  decode(bytes: Uint8Array): unknown {
    return PriceLayout.decode(bytes, 0);
  }
}

class PackrCodec implements Codec {
  readonly reusesBuffer = true;
  readonly #packr: Packr;
  constructor(records: boolean) {
    // With records, the structures are shared by sender and receiver beforehand (as a schema would be), so every
    // message is the record's values after a two-byte reference; plain msgpack carries every key in every message.
    this.#packr = records ? new Packr({ structures: [], maxSharedStructures: 32 }) : new Packr({ useRecords: false });
  }
  encode(v: PriceUpdate): Uint8Array {
    return this.#packr.pack(v);
  }
  decode(bytes: Uint8Array): unknown {
    return this.#packr.unpack(bytes);
  }
}

class JsonCodec implements Codec {
  readonly reusesBuffer = false;
  encode(v: PriceUpdate): Uint8Array {
    return Buffer.from(JSON.stringify(v));
  }
  decode(bytes: Uint8Array): unknown {
    const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return JSON.parse(b.toString('utf8'));
  }
}

class V8Codec implements Codec {
  readonly reusesBuffer = false;
  encode(v: PriceUpdate): Uint8Array {
    return serialize(v);
  }
  decode(bytes: Uint8Array): unknown {
    return deserialize(bytes);
  }
}

/**
 * The codec of `system`, or undefined for an unknown one. Two calls give codecs that understand each other (the
 * msgpackr record structures are made the same way on both sides, from the same first record).
 */
export function codecOf(system: string, first: PriceUpdate): Codec | undefined {
  let c: Codec;
  switch (system) {
    case 'struct':
      return new StructCodec();
    case 'msgpackr-records':
      c = new PackrCodec(true);
      // The structure is defined by the first record; both sides encode it once before any message, as a shared
      // schema would be agreed before.
      c.encode(first);
      return c;
    case 'msgpackr':
      return new PackrCodec(false);
    case 'json':
      return new JsonCodec();
    case 'v8':
      return new V8Codec();
    default:
      return undefined;
  }
}

/**
 * Throws unless every record of `records` encoded by `sender` comes back as it went when decoded by `receiver` (a
 * codec made apart, as on the other side of a connection), flattened for the struct.
 */
export function checkRoundTrip(system: string, sender: Codec, receiver: Codec, records: readonly PriceUpdate[]): void {
  for (const r of records) {
    const back = receiver.decode(sender.encode(r).slice());
    const want = system === 'struct' ? flat(r) : r;
    if (!isDeepStrictEqual(back, want))
      throw new Error(`${system}: a record does not survive encode and decode: ${JSON.stringify(back)}`);
  }
}

function flat(r: PriceUpdate) {
  const { id: instrumentId, symbol, venue, tickSize } = r.instrument;
  const { bid, ask, bidSize, askSize, time, sequence } = r;
  return { instrumentId, symbol, venue, tickSize, bid, ask, bidSize, askSize, time, sequence };
}
