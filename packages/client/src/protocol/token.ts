import { TOKEN_PROTOCOL_PREFIX } from './limits.js';

/** The subprotocol that carries `token` (base64url of its UTF-8 bytes, valid in a Sec-WebSocket-Protocol header). */
export function tokenProtocol(token: string): string {
  let bin = '';
  for (const b of new TextEncoder().encode(token)) bin += String.fromCharCode(b);
  return TOKEN_PROTOCOL_PREFIX + btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The token carried by one of `protocols`, or undefined when none carries one or it does not decode. */
export function tokenFromProtocols(protocols: Iterable<string>): string | undefined {
  for (const p of protocols) {
    if (!p.startsWith(TOKEN_PROTOCOL_PREFIX)) continue;
    const b64 = p.slice(TOKEN_PROTOCOL_PREFIX.length).replace(/-/g, '+').replace(/_/g, '/');
    try {
      const bin = atob(b64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return undefined;
    }
  }
  return undefined;
}
