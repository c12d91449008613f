/**
 * The one-byte namespaces of a map's engine keys (FORMAT.md §7): the map's own metadata, its records, and its
 * user's named metadata. A file of their own, so that the stored-value format and the persistence that uses it can
 * both name them without importing each other.
 */
export const NS_META = 0x00;
export const NS_DATA = 0x01;
/** Named metadata of the map's user (map/map-meta.ts). */
export const NS_USER_META = 0x02;
