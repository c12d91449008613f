/**
 * Objects of one checkpoint in the bucket, to take them all out: what an upload has stored, when the upload fails,
 * or a whole checkpoint that a prune removes.
 *
 * The object store's own `delete` leaves a deletion marker (the object's meta message, marked deleted) on the
 * object's meta subject for ever, so that watchers see the deletion: every failed upload or pruned checkpoint would
 * leave one marker per file. Nobody can use these objects as a checkpoint any more (an upload stores its manifest
 * last, a prune purges it first), so they are purged instead: the meta subject of each name and the chunk subject of
 * each stored object, as the object store
 * lays them out (NATS ADR-20: stream `OBJ_<bucket>`, `$O.<bucket>.M.<name in padded base64url>` and
 * `$O.<bucket>.C.<nuid>`). The names carry the upload's own id, so no purge can touch another upload's objects.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { ObjectInfo } from '@nats-io/obj';

export class StoredObjects {
  /** Every name a put was started for: a put that failed may still have stored its meta (a lost acknowledgement). */
  private readonly names: string[] = [];
  /** The chunks of each put that succeeded (a failed put purges its own). */
  private readonly nuids: string[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly bucket: string,
    private readonly timeoutMs: number,
  ) {}

  /** Before a put of `name`. */
  attempt(name: string): void {
    this.names.push(name);
  }

  /** After a put succeeded. */
  stored(info: ObjectInfo): void {
    this.nuids.push(info.nuid);
  }

  /**
   * Purges every subject of what was attempted, each tried whatever became of the others. Resolves to undefined
   * when all were purged, else a sentence saying how many were not and why (for the upload's error); never rejects.
   */
  async purge(): Promise<string | undefined> {
    const subjects = [
      ...this.names.map((name) => `$O.${this.bucket}.M.${paddedBase64Url(name)}`),
      ...this.nuids.map((nuid) => `$O.${this.bucket}.C.${nuid}`),
    ];
    if (subjects.length === 0) return undefined;
    let failed = 0;
    let reason = '';
    try {
      const jsm = await jetstreamManager(this.nc, { checkAPI: false, timeout: this.timeoutMs });
      for (const filter of subjects) {
        try {
          await jsm.streams.purge(`OBJ_${this.bucket}`, { filter });
        } catch (err) {
          failed++;
          reason ||= String(err);
        }
      }
    } catch (err) {
      failed = subjects.length;
      reason = String(err);
    }
    return failed === 0 ? undefined : `${failed} of its ${subjects.length} subjects were not purged (${reason})`;
  }
}

/** An object's name as its meta subject spells it: the name's bytes (Latin-1, as btoa takes them) in base64url. */
function paddedBase64Url(name: string): string {
  return Buffer.from(name, 'latin1').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}
