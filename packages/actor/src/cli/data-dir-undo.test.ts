import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dataDirUndo } from './data-dir-undo.js';

const root = mkdtempSync(join(tmpdir(), 'heapless-undo-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** What a start that opened `dir` leaves there: a database's files. */
function open(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'CURRENT'), 'MANIFEST-000001\n');
  mkdirSync(join(dir, 'sub'));
}

describe('dataDirUndo', () => {
  it('removes a directory the start created, with the parents it created', async () => {
    const undo = await dataDirUndo(join(root, 'a', 'b', 'data'));
    open(join(root, 'a', 'b', 'data'));
    await undo();
    expect(existsSync(join(root, 'a'))).toBe(false);
  });

  it('empties a directory that was empty, and keeps it', async () => {
    const dir = join(root, 'empty');
    mkdirSync(dir);
    const undo = await dataDirUndo(dir);
    open(dir);
    await undo();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('touches nothing in a directory that held anything', async () => {
    const dir = join(root, 'held');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    const undo = await dataDirUndo(dir);
    open(dir);
    await undo();
    expect(readdirSync(dir).sort()).toEqual(['CURRENT', 'notes.txt', 'sub']);
  });

  it('touches nothing when the path is a file', async () => {
    const file = join(root, 'file');
    writeFileSync(file, 'x');
    await (await dataDirUndo(file))();
    expect(existsSync(file)).toBe(true);
  });
});
