/**
 * The scan of `gc-pressure`'s `scan` phase: count users of at least `minAge`. OffHeapMap's parallel `scan` loads this
 * module in its worker threads and calls the named export once per partition; the single-thread rows call the same
 * functions through `scanSync`, so both do exactly the same work per record.
 */
interface Cursor {
  next(): boolean;
  readonly value: { age: number };
  readonly view: { readonly age: number };
}

/** Decodes each record (msgpack maps). */
export function countOlder(cursor: Cursor, minAge: unknown): number {
  let n = 0;
  while (cursor.next()) if (cursor.value.age >= (minAge as number)) n++;
  return n;
}

/** Reads `age` in place through the cursor's view (struct maps). */
export function countOlderByView(cursor: Cursor, minAge: unknown): number {
  let n = 0;
  const view = cursor.view;
  while (cursor.next()) if (view.age >= (minAge as number)) n++;
  return n;
}
