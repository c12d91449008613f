/** The record of seed 003: a user with a few short strings, a number and a small array. */
export interface User {
  id: number;
  name: string;
  email: string;
  age: number;
  friends: number[];
}

/** The key of user `i`. */
export function userKey(i: number): string {
  return `user:${i}`;
}

/**
 * A new user object for id `i` (deterministic, so every system stores the same data). `ageBump` changes the age for
 * updates. Every field is set in one literal so all users share one hidden class.
 */
export function makeUser(i: number, ageBump = 0): User {
  return {
    id: i,
    name: `user ${i}`,
    email: `user${i}@example.com`,
    age: 18 + ((i + ageBump) % 80),
    friends: [(i * 7 + 1) % 1_000_000, (i * 13 + 2) % 1_000_000, (i * 31 + 3) % 1_000_000],
  };
}
