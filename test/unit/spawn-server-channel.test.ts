import { PassThrough } from 'node:stream';
import { FRAME, HEADER } from '../../activities/sandbox/spawn-frames';
import { SpawnServer, type ServerChannel } from '../../activities/sandbox/spawn-server';

/** A spawn server's channel whose frames the test writes itself. */
function fakeChannel() {
  const input = new PassThrough();
  const output = new PassThrough();
  let end: ((reason: string, neverStarted: boolean) => void) | undefined;
  const channel: ServerChannel & { output: PassThrough; kills: number } = {
    input,
    output,
    kills: 0,
    hold: () => undefined,
    kill() {
      channel.kills += 1;
      end?.('killed', false);
    },
    onEnd: (callback) => (end = callback),
  };
  return channel;
}

const frame = (id: number, kind: number, payload: Buffer, size = payload.length) => {
  const header = Buffer.alloc(HEADER);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(id, 4);
  header.writeUInt8(kind, 8);
  return Buffer.concat([header, payload]);
};

test("a frame larger than any the server sends ends that server, and nothing after it is taken for the server's", async () => {
  const channel = fakeChannel();
  const server = new SpawnServer(() => channel, true);
  const child = server.launch('/bin/true', [], { cwd: '/', env: {} });
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  const closed = new Promise<[number | null, string | null]>((resolve) =>
    child.once('close', (c, s) => resolve([c, s])),
  );
  channel.output.write(frame(1, FRAME.started, Buffer.from('{"pid":2}')));
  channel.output.write(frame(1, FRAME.stdout, Buffer.from('real')));
  // A header that says 2 GiB follow, then what would parse as output of the process.
  channel.output.write(frame(1, FRAME.stdout, Buffer.alloc(0), 2 ** 31));
  channel.output.write(frame(1, FRAME.stdout, Buffer.from('forged')));
  expect(await closed).toEqual([null, 'SIGKILL']);
  expect(channel.kills).toBe(1);
  expect(Buffer.concat(out).toString()).toBe('real');
});

test('a process of a server that ended is never sent to the next one; a launch after close starts another', async () => {
  const channels: ReturnType<typeof fakeChannel>[] = [];
  const server = new SpawnServer(() => {
    channels.push(fakeChannel());
    return channels.at(-1)!;
  }, false);
  const first = server.launch('/bin/cat', [], { cwd: '/', env: {}, stdin: true });
  const written: Buffer[] = [];
  server.close();
  const second = server.launch('/bin/true', [], { cwd: '/', env: {} });
  channels[1]!.input.on('data', (c: Buffer) => written.push(c));
  const refused = new Promise<Error>((resolve) => first.stdin!.once('error', resolve));
  first.stdin!.write('late input');
  first.signal('SIGTERM');
  expect(await refused).toMatchObject({ code: 'EPIPE' });
  expect(channels).toHaveLength(2);
  // The second server hears nothing of the first's process.
  expect(written.map((c) => [c.readUInt32BE(4), c.readUInt8(8)])).toEqual([[2, FRAME.start]]);
  expect(second.stdin).toBeNull();
});

test.each([
  ['an exit that is not an object', FRAME.exit, 'null'],
  ['an exit out of range', FRAME.exit, '{"code":256,"signal":0}'],
  ['a second start', FRAME.started, '{"pid":3}'],
  ['a failure after the start', FRAME.failed, '{"message":"no","code":"EIO"}'],
])('%s ends that server: its processes end killed, whatever it said before', async (_name, kind, payload) => {
  const channel = fakeChannel();
  const server = new SpawnServer(() => channel, true);
  const child = server.launch('/bin/true', [], { cwd: '/', env: {} });
  const closed = new Promise<[number | null, string | null]>((resolve) =>
    child.once('close', (c, s) => resolve([c, s])),
  );
  channel.output.write(frame(1, FRAME.started, Buffer.from('{"pid":2}')));
  channel.output.write(frame(1, kind, Buffer.from(payload)));
  expect(await closed).toEqual([null, 'SIGKILL']);
  expect(channel.kills).toBe(1);
});
