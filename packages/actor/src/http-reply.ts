import { ERROR_CODES, type ErrorCode, MSGPACK_OPTIONS } from '@heapless/client/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Packr } from 'msgpackr';
import { errorBody } from './wire-error.js';

export const MSGPACK = 'application/msgpack';

/** Whether the request asks for msgpack answers (`accept` names application/msgpack). */
export function wantsMsgpack(req: FastifyRequest): boolean {
  return (req.headers.accept ?? '').includes(MSGPACK);
}

/**
 * Answers HTTP requests in the type they ask for: msgpack when `accept` names it, JSON otherwise (`undefined` as
 * `null`). One encoder per server.
 */
export class HttpReplier {
  readonly packr = new Packr(MSGPACK_OPTIONS);

  value(req: FastifyRequest, reply: FastifyReply, status: number, value: unknown): FastifyReply {
    reply.code(status);
    if (wantsMsgpack(req)) return reply.type(MSGPACK).send(this.packr.pack(value));
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(value ?? null));
  }

  error(req: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string): FastifyReply {
    return this.value(req, reply, ERROR_CODES[code].status, errorBody(code, message));
  }
}
