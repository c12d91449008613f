import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CliArgs, parseCli } from './cli-args.js';

const defaults = {
  command: 'serve',
  data: './heapless-data',
  memory: false,
  checkpointRoot: undefined,
  host: '127.0.0.1',
  port: 7070,
  tcpPort: undefined,
  token: undefined,
  sync: false,
  logLevel: 'info',
  maxInFlight: undefined,
  maxRequestBytes: undefined,
  maxReplyBytes: undefined,
  maxConnections: undefined,
  headersTimeoutMs: undefined,
  requestTimeoutMs: undefined,
  keepAliveTimeoutMs: undefined,
  heartbeatMs: undefined,
  allowedOrigins: [],
  allowedHosts: [],
  allowTokenInQuery: false,
  tlsCert: undefined,
  tlsKey: undefined,
  insecure: false,
  engine: {},
};

// [argv, env, expected result or the start of the usage error]
const cases: [string, Record<string, string>, Partial<CliArgs> | string][] = [
  ['serve', {}, defaults as CliArgs],
  [
    'serve --data /d --host 0.0.0.0 --port 0 --token t --sync',
    {},
    { data: '/d', host: '0.0.0.0', port: 0, token: 't', sync: true },
  ],
  ['serve --data=/d --memory --log-level debug', {}, { data: '/d', memory: true, logLevel: 'debug' }],
  ['serve', { HEAPLESS_TOKEN: 'env' }, { token: 'env' }],
  ['serve --checkpoint-root /cp', {}, { checkpointRoot: '/cp' }],
  ['serve --checkpoint-root=', {}, '--checkpoint-root must not be empty'],
  ['serve --memory --checkpoint-root /cp', {}, '--checkpoint-root needs a persisted map, not --memory'],
  [
    'serve --max-in-flight 64 --max-request-bytes 1048576 --max-reply-bytes 65536',
    {},
    { maxInFlight: 64, maxRequestBytes: 1048576, maxReplyBytes: 65536 },
  ],
  [
    'serve --max-connections 10 --headers-timeout 500 --request-timeout 900 --keep-alive-timeout 100 --heartbeat 250',
    {},
    { maxConnections: 10, headersTimeoutMs: 500, requestTimeoutMs: 900, keepAliveTimeoutMs: 100, heartbeatMs: 250 },
  ],
  [
    'serve --allow-origin http://localhost:5173 --allow-origin https://app.example --allow-host kv.lan --allow-token-in-query',
    {},
    {
      allowedOrigins: ['http://localhost:5173', 'https://app.example'],
      allowedHosts: ['kv.lan'],
      allowTokenInQuery: true,
    },
  ],
  ['serve --tls-cert c.pem --tls-key k.pem', {}, { tlsCert: 'c.pem', tlsKey: 'k.pem' }],
  ['serve --host 0.0.0.0 --insecure', {}, { host: '0.0.0.0', insecure: true }],
  ['serve --tls-cert c.pem', {}, '--tls-cert and --tls-key go together'],
  ['serve --heartbeat 1.5', {}, '--heartbeat must be an integer from 1 to 2147483647, got 1.5'],
  // A Node timer takes at most 2^31 - 1 ms; a longer delay fires after 1 ms.
  ['serve --heartbeat 2147483647', {}, { heartbeatMs: 2147483647 }],
  ['serve --heartbeat 2147483648', {}, '--heartbeat must be an integer from 1 to 2147483647, got 2147483648'],
  ['serve --headers-timeout 2147483648', {}, '--headers-timeout must be an integer from 1 to 2147483647'],
  ['serve --request-timeout 9999999999', {}, '--request-timeout must be an integer from 1 to 2147483647'],
  ['serve --keep-alive-timeout 2147483648', {}, '--keep-alive-timeout must be an integer from 1 to 2147483647'],
  ['serve --max-reply-bytes 0', {}, '--max-reply-bytes must be an integer >= 1, got 0'],
  ['serve --max-request-bytes 1e6', {}, '--max-request-bytes must be an integer >= 1, got 1e6'],
  ['serve --token argv', { HEAPLESS_TOKEN: 'env' }, { token: 'argv' }],
  ['', {}, { command: 'help' }],
  ['help', {}, { command: 'help' }],
  ['serve -h', {}, { command: 'help' }],
  ['--version', {}, { command: 'version' }],
  ['serve --tcp-port 0', {}, { tcpPort: 0 }],
  ['serve --tcp-port 70000', {}, '--tcp-port must be an integer'],
  ['serve --port 70000', {}, '--port must be an integer'],
  ['serve --port 12x', {}, '--port must be an integer'],
  ['serve --port', {}, "Option '--port <value>' argument missing"],
  ['serve --bogus', {}, "Unknown option '--bogus'"],
  ['start', {}, 'unknown command start'],
  ['serve extra', {}, 'unexpected argument extra'],
  ['serve --log-level loud', {}, '--log-level loud is not a pino level'],
  ['serve --token=', {}, 'the token must not be empty'],
  [
    'serve --disable-wal --block-cache-size 0 --compression zstd --num-levels 5 --level-base-bytes 1048576 --level-multiplier 8 --write-buffer-size 65536 --target-file-size 4096 --bloom-bits 0 --periodic-compaction 03:30',
    {},
    {
      engine: {
        wal: false,
        blockCacheSize: 0,
        compression: 'zstd',
        numLevels: 5,
        maxBytesForLevelBase: 1048576,
        levelSizeMultiplier: 8,
        writeBufferSize: 65536,
        targetFileSize: 4096,
        bloomBitsPerKey: 0,
        periodicCompaction: { at: '03:30' },
      },
    },
  ],
  ['serve --periodic-compaction 86400', {}, { engine: { periodicCompaction: { everySeconds: 86400 } } }],
  ['serve --periodic-compaction soon', {}, '--periodic-compaction must be seconds from 0.001 to 31622400 or HH:MM'],
  ['serve --periodic-compaction 99:99', {}, '--periodic-compaction must be seconds from 0.001 to 31622400 or HH:MM'],
  ['serve --periodic-compaction 0', {}, '--periodic-compaction must be seconds from 0.001 to 31622400 or HH:MM'],
  ['serve --periodic-compaction 31622401', {}, '--periodic-compaction must be seconds from 0.001'],
  ['serve --compression brotli', {}, '--compression must be one of none, snappy, lz4, zstd, deflate, got brotli'],
  ['serve --num-levels x', {}, '--num-levels must be an integer >= 0, got x'],
  ['serve --block-cache-size 1.5', {}, '--block-cache-size must be an integer >= 0, got 1.5'],
  [
    'serve --follow nats://127.0.0.1:4222 --stream users --schema v2 --max-replay 0 --bucket cps --serve-stale --checkpoint-every 1000 --keep-checkpoints 2 --write-timeout 900',
    {},
    {
      follow: {
        servers: ['nats://127.0.0.1:4222'],
        stream: 'users',
        schema: 'v2',
        maxReplay: 0,
        bucket: 'cps',
        serveStale: true,
        checkpointEvery: 1000,
        keepCheckpoints: 2,
        writeTimeoutMs: 900,
      },
    },
  ],
  [
    'serve --follow nats://a:1 --follow nats://b:2 --stream s',
    {},
    {
      follow: {
        servers: ['nats://a:1', 'nats://b:2'],
        stream: 's',
        schema: 'default',
        maxReplay: undefined,
        bucket: undefined,
        serveStale: false,
        checkpointEvery: undefined,
        keepCheckpoints: undefined,
        writeTimeoutMs: 5000,
      },
    },
  ],
  ['serve --follow nats://a:1', {}, '--follow needs --stream NAME'],
  ['serve --follow http://a:1 --stream s', {}, '--follow takes nats://HOST:PORT, got http://a:1'],
  ['serve --follow nats://a:1 --stream s --memory', {}, '--follow needs a data directory'],
  ['serve --stream s', {}, '--stream goes with --follow'],
  ['serve --follow nats://a:1 --stream s --checkpoint-every 10', {}, '--checkpoint-every needs --bucket'],
  ['serve --follow nats://a:1 --stream s --max-replay 1e3', {}, '--max-replay must be an integer >= 0, got 1e3'],
  ['serve --follow nats://a:1 --stream s --write-timeout 0', {}, '--write-timeout must be an integer from 1 to'],
  [
    'serve --follow nats://a:1 --stream s --write-timeout 2147483648',
    {},
    '--write-timeout must be an integer from 1 to 2147483647, got 2147483648',
  ],
];

describe('parseCli', () => {
  for (const [line, env, expected] of cases) {
    it(`${line || '(nothing)'} ${Object.keys(env).length ? JSON.stringify(env) : ''}`, () => {
      const argv = line === '' ? [] : line.split(' ');
      if (typeof expected === 'string') {
        expect(() => parseCli(argv, env)).toThrow(expected);
        try {
          parseCli(argv, env);
        } catch (e) {
          expect((e as { code: string }).code).toBe('HEAPLESS_ERR_ACTOR_USAGE');
        }
      } else {
        expect(parseCli(argv, env)).toMatchObject(expected);
      }
    });
  }
});

describe('parseCli --config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'heapless-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it('reads serve and engine options from the file; flags on the command line win', () => {
    const path = file('ok.json', {
      data: '/srv/kv',
      port: 8080,
      sync: true,
      allowedOrigins: ['https://a.example'],
      engine: { wal: false, blockCacheSize: 0, compression: 'lz4', periodicCompaction: { everySeconds: 3600 } },
    });
    expect(parseCli(['serve', '--config', path, '--port', '9090', '--compression', 'none'])).toMatchObject({
      data: '/srv/kv',
      port: 9090,
      sync: true,
      allowedOrigins: ['https://a.example'],
      engine: { wal: false, blockCacheSize: 0, compression: 'none', periodicCompaction: { everySeconds: 3600 } },
    });
  });

  const refusals: [string, unknown, string][] = [
    ['unknown key', { prot: 1 }, 'unknown key "prot" (known: data, memory, checkpointRoot, host, port'],
    // Written as text: an object literal's __proto__ would set its prototype, not make a key.
    ['__proto__ key', '{"__proto__": 1}', 'unknown key "__proto__" (known: data,'],
    ['constructor key', '{"constructor": "x"}', 'unknown key "constructor" (known: data,'],
    ['toString key', '{"toString": true}', 'unknown key "toString" (known: data,'],
    ['heartbeat a timer cannot take', { heartbeatMs: 3e9 }, '--heartbeat must be an integer from 1 to 2147483647'],
    ['unknown engine key', { engine: { walOff: true } }, 'engine.walOff: unknown engine option (known: wal,'],
    ['wrong type', { port: '80' }, '"port" must be an integer'],
    ['wrong engine type', { engine: { blockCacheSize: '1' } }, 'engine.blockCacheSize must be an integer'],
    [
      'bad schedule',
      { engine: { periodicCompaction: { every: 1 } } },
      'must be { "everySeconds": N } or { "at": "HH:MM" }',
    ],
    ['not an object', [1, 2], 'the file must hold a JSON object'],
    ['not JSON', '{port: 1}', 'JSON'],
  ];
  for (const [what, content, message] of refusals) {
    it(`refuses a file with a ${what}, naming it`, () => {
      const path = file(`${what.replaceAll(' ', '-')}.json`, content);
      expect(() => parseCli(['serve', '--config', path])).toThrow(message);
      expect(() => parseCli(['serve', '--config', path])).toThrow(
        expect.objectContaining({ code: 'HEAPLESS_ERR_ACTOR_USAGE' }),
      );
    });
  }

  it('refuses a missing file', () => {
    expect(() => parseCli(['serve', '--config', join(dir, 'none.json')])).toThrow(/--config .*none\.json: ENOENT/);
  });
});
