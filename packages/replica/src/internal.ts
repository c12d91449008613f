/**
 * `@heapless/replica/internal`: parts of the package that its tests and tools reach into (the follower metadata
 * keys, opening local follower data alone, the stream checks and the codec below the publisher). Not a stable
 * interface: it changes with the package's insides; programs use the entry points of `@heapless/replica`.
 */
export { decodeChanges } from './change/change-codec.js';
export { readStreamPosition, resumeFrom, verifyChangeStream } from './change/change-stream.js';
export { addFollowerMeta, META_CHECKPOINT, META_POSITION } from './follow/follower-meta.js';
export { openLocalFollowerData } from './follow/follower-open.js';
