import { statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { socketPath } from '../../activities/sandbox/socket-path';

test('a socket stays where it was meant to be when its path fits in sun_path', () => {
  expect(socketPath('/srv/ws/.sandbox/r1/sockets', 'abc.sock')).toBe('/srv/ws/.sandbox/r1/sockets/abc.sock');
});

test('under a deep directory, a socket goes to a short directory of the worker, traversable but not listable', () => {
  const deep = `/tmp/${'d'.repeat(60)}/workspaces/.sandbox/01a215f6-7898-792f-85b1-2d71e1a5115d/sockets`;
  const placed = socketPath(deep, 'FyQyWGNhfNDq.sock');
  expect(Buffer.byteLength(path.join(deep, 'FyQyWGNhfNDq.sock'))).toBeGreaterThan(107);
  expect(Buffer.byteLength(placed)).toBeLessThanOrEqual(100);
  expect(path.dirname(placed).startsWith(os.tmpdir())).toBe(true);
  expect(path.basename(placed)).toBe('FyQyWGNhfNDq.sock');
  expect(statSync(path.dirname(placed)).mode & 0o777).toBe(0o711);
});
