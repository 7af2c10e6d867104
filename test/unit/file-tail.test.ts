import { appendFile, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileTail, MAX_FOLLOWED_BYTES } from '../../activities/sandbox/file-tail';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'file-tail-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function collector() {
  const chunks: Buffer[] = [];
  let waiting: { until: string; resolve: () => void } | undefined;
  const text = () => Buffer.concat(chunks).toString('utf8');
  return {
    onChunk(chunk: Buffer) {
      chunks.push(chunk);
      if (waiting && text().includes(waiting.until)) waiting.resolve();
    },
    text,
    /** Resolves once what was read holds `until`: the tail hands on what is appended while it follows. */
    seen(until: string) {
      return text().includes(until)
        ? Promise.resolve()
        : new Promise<void>((resolve) => (waiting = { until, resolve }));
    },
  };
}

test('hands on what is appended while it follows, in order, and the rest once finished', async () => {
  const file = path.join(dir, 'out.jsonl');
  await writeFile(file, 'first\n');
  const heard = collector();
  const tail = new FileTail(file, heard.onChunk);
  await heard.seen('first\n');
  await appendFile(file, 'second\n');
  await heard.seen('second\n');
  // Written just before the writer is known to be done: still read by finish.
  await appendFile(file, 'x'.repeat(200 * 1024) + '\nlast\n');
  await tail.finish();
  expect(heard.text()).toBe(`first\nsecond\n${'x'.repeat(200 * 1024)}\nlast\n`);
});

test('a file made shorter (its writer reopened /dev/stdout with `>`) is followed from its start again', async () => {
  const file = path.join(dir, 'out.jsonl');
  await writeFile(file, 'before the truncation\n');
  const heard = collector();
  const tail = new FileTail(file, heard.onChunk);
  await heard.seen('before the truncation\n');
  await writeFile(file, 'after\n');
  await heard.seen('after\n');
  await tail.finish();
  expect(heard.text()).toBe('before the truncation\nafter\n');
});

test('a sparse file of a terabyte (one ftruncate of its writer) is read no further than MAX_FOLLOWED_BYTES', async () => {
  const file = path.join(dir, 'sparse.jsonl');
  await writeFile(file, '');
  await truncate(file, 1024 ** 4);
  let bytes = 0;
  const tail = new FileTail(file, (chunk) => (bytes += chunk.length));
  await tail.finish();
  expect(bytes).toBe(MAX_FOLLOWED_BYTES);
});

test('an empty file finishes with nothing handed on', async () => {
  const file = path.join(dir, 'empty.jsonl');
  await writeFile(file, '');
  const heard = collector();
  const tail = new FileTail(file, heard.onChunk);
  await tail.finish();
  expect(heard.text()).toBe('');
});

test('a file that is not there is an error of finish, never an unhandled rejection', async () => {
  const tail = new FileTail(path.join(dir, 'missing.jsonl'), () => undefined);
  await expect(tail.finish()).rejects.toMatchObject({ code: 'ENOENT' });
});
