/**
 * The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days). Node runs a longer one after 1 ms, with only
 * a TimeoutOverflowWarning, which would turn a generous timeout into an immediate one: every package checks its
 * timer delays against this one value.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
