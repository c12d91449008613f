import { describe, expect, it } from 'vitest';
import { type CliArgs, parseCli } from './cli-args.js';

const defaults = {
  command: 'serve',
  data: './heapless-data',
  memory: false,
  host: '127.0.0.1',
  port: 7070,
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
  ['serve --heartbeat 1.5', {}, '--heartbeat must be an integer >= 1, got 1.5'],
  ['serve --max-reply-bytes 0', {}, '--max-reply-bytes must be an integer >= 1, got 0'],
  ['serve --max-request-bytes 1e6', {}, '--max-request-bytes must be an integer >= 1, got 1e6'],
  ['serve --token argv', { HEAPLESS_TOKEN: 'env' }, { token: 'argv' }],
  ['', {}, { command: 'help' }],
  ['help', {}, { command: 'help' }],
  ['serve -h', {}, { command: 'help' }],
  ['--version', {}, { command: 'version' }],
  ['serve --port 70000', {}, '--port must be an integer'],
  ['serve --port 12x', {}, '--port must be an integer'],
  ['serve --port', {}, "Option '--port <value>' argument missing"],
  ['serve --bogus', {}, "Unknown option '--bogus'"],
  ['start', {}, 'unknown command start'],
  ['serve extra', {}, 'unexpected argument extra'],
  ['serve --log-level loud', {}, '--log-level loud is not a pino level'],
  ['serve --token=', {}, 'the token must not be empty'],
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
          expect((e as { code: string }).code).toBe('HEAPLESS_ERR_USAGE');
        }
      } else {
        expect(parseCli(argv, env)).toMatchObject(expected);
      }
    });
  }
});
