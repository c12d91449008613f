/**
 * The four ways a struct layout refuses something. This package has no error class of its own: the package that
 * lays records out (the client, the map) supplies how each kind is raised, so that its callers keep getting the
 * error class and the stable codes they already branch on (the client's `STRUCT_*` codes, offheap's
 * `HEAPLESS_ERR_OFFHEAP_*`). Each function returns the error; the caller throws it.
 */
export interface StructErrors {
  /** A layout the format cannot lay out: an unknown field type, n outside 1..65535, a reserved name, no field. */
  layout(message: string): Error;
  /** A value of the wrong JS type for its field, or a number that is not an integer in an integer field. */
  value(message: string): Error;
  /** A value that does not fit its field: an integer out of range, a string or an array longer than the field. */
  overflow(message: string): Error;
  /** Bytes that cannot hold one record: fewer than the layout's size from the offset on. */
  size(message: string): Error;
}
