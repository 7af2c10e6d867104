import type { RunProcesses } from './sandboxed-process';

/**
 * The file tools and skill discovery read and write the workspace from inside the run's sandbox,
 * as the run's user: a symlink the run (or a concurrently running MCP server) plants can then lead
 * nowhere the run could not go anyway, and files the tools write belong to the run.
 */
export interface WorkspaceFiles {
  read(file: string, maxBytes?: number): Promise<string>;
  /** The bytes of a regular file (not a symlink); refused when it is larger than `maxBytes`. */
  readBytes(file: string, maxBytes: number): Promise<Buffer>;
  write(file: string, content: string): Promise<number>;
  writeBytes(file: string, content: Buffer): Promise<number>;
  list(dir: string): Promise<{ name: string; dir: boolean }[]>;
  isDirectory(dir: string): Promise<boolean>;
  /** `<skillDir>/<name>/SKILL.md` files of a repository (relative to the workspace). */
  skillFiles(repo: string, skillDirs: readonly string[]): Promise<{ skillPath: string; content: string }[]>;
  /**
   * `<dir>/<entry>/<fileName>` of every subdirectory entry of a repository's `dir`, in name
   * order, following no symlink on the way (one is reported, not read). Paths are relative to
   * the repository; a file larger than `maxBytes`, or entries past `maxEntries`, come back as an
   * `error` instead of `content`.
   */
  filesInSubdirectories(
    repo: string,
    dir: string,
    fileName: string,
    limits: { maxBytes: number; maxEntries: number },
  ): Promise<{ path: string; content?: string; error?: string }[]>;
}

export class WorkspaceFileError extends Error {
  override name = 'WorkspaceFileError';
}

const MAX_READ_BYTES = 32 * 1024 * 1024;

/**
 * Runs in the sandbox as `node -e FILES_HELPER_SOURCE <workspace root>`, reads one JSON request
 * on stdin and prints one JSON answer. Paths are relative to the workspace root (or absolute
 * inside it); one that resolves outside it, through symlinks too, is refused.
 */
const FILES_HELPER_SOURCE = `
const fs = require('node:fs');
const path = require('node:path');
const root = fs.realpathSync(process.argv[1]);
const inside = (p) => p === root || p.startsWith(root + path.sep);
function resolve(requested) {
  const target = path.resolve(root, requested || '.');
  if (!inside(target)) throw new Error(requested + ' is outside the workspace');
  let existing = target;
  for (;;) {
    let real;
    try { real = fs.realpathSync(existing); } catch {
      try { if (fs.lstatSync(existing).isSymbolicLink()) throw new Error(requested + ' goes through a dangling symlink'); } catch (e) { if (e.message.includes('dangling')) throw e; }
    }
    if (real !== undefined) { if (!inside(real)) throw new Error(requested + ' leads outside the workspace'); break; }
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  return target;
}
function run(req) {
  switch (req.op) {
    case 'read': {
      const file = resolve(req.path);
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        const size = fs.fstatSync(fd).size;
        const buf = Buffer.alloc(Math.min(size, req.maxBytes));
        const n = fs.readSync(fd, buf, 0, buf.length, 0);
        return { content: buf.subarray(0, n).toString('utf8'), size };
      } finally { fs.closeSync(fd); }
    }
    case 'readbytes': {
      const file = resolve(req.path);
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      try {
        const stat = fs.fstatSync(fd);
        if (!stat.isFile()) throw new Error(req.path + ' is not a regular file');
        if (stat.size > req.maxBytes) throw new Error(req.path + ' is ' + stat.size + ' bytes, above the limit of ' + req.maxBytes + ' bytes');
        const buf = Buffer.alloc(stat.size);
        let at = 0;
        while (at < buf.length) { const n = fs.readSync(fd, buf, at, buf.length - at, at); if (n === 0) break; at += n; }
        return { base64: buf.subarray(0, at).toString('base64') };
      } finally { fs.closeSync(fd); }
    }
    case 'write': {
      const file = resolve(req.path);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      resolve(req.path);
      const content = req.encoding === 'base64' ? Buffer.from(req.content, 'base64') : req.content;
      fs.writeFileSync(file, content, { flag: fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW });
      return { bytes: Buffer.byteLength(content) };
    }
    case 'list':
      return { entries: fs.readdirSync(resolve(req.path), { withFileTypes: true }).map((e) => ({ name: e.name, dir: e.isDirectory() })) };
    case 'isdir': {
      try { return { dir: fs.statSync(resolve(req.path)).isDirectory() }; } catch { return { dir: false }; }
    }
    case 'skills': {
      const found = [];
      for (const dir of req.dirs) {
        let entries;
        try { entries = fs.readdirSync(resolve(path.join(req.repo, dir)), { withFileTypes: true }); } catch { continue; }
        for (const e of entries) {
          if (!e.isDirectory()) continue;
          const skillPath = dir + '/' + e.name + '/SKILL.md';
          try {
            const file = resolve(path.join(req.repo, skillPath));
            const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
            try {
              if (!fs.fstatSync(fd).isFile()) continue;
              const buf = Buffer.alloc(Math.min(fs.fstatSync(fd).size, 1024 * 1024));
              fs.readSync(fd, buf, 0, buf.length, 0);
              found.push({ skillPath, content: buf.toString('utf8') });
            } finally { fs.closeSync(fd); }
          } catch {}
        }
      }
      return { skills: found };
    }
    case 'subdirfiles': {
      const rel = path.posix.normalize(req.repo ? req.repo + '/' + req.dir : req.dir);
      if (rel.split('/').includes('..') || path.isAbsolute(rel)) throw new Error(rel + ' is outside the workspace');
      let at = root;
      for (const part of rel.split('/').filter((p) => p && p !== '.')) {
        at = path.join(at, part);
        let stat;
        try { stat = fs.lstatSync(at); } catch { return { files: [] }; }
        if (stat.isSymbolicLink()) return { files: [{ path: req.dir, error: 'is a symlink; not followed' }] };
        if (!stat.isDirectory()) return { files: [] };
      }
      const files = [];
      const entries = fs.readdirSync(at, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const e of entries) {
        const entryPath = req.dir + '/' + e.name;
        if (e.isSymbolicLink()) { files.push({ path: entryPath, error: 'is a symlink; not followed' }); continue; }
        if (!e.isDirectory()) continue;
        const filePath = entryPath + '/' + req.name;
        if (files.length >= req.maxEntries) { files.push({ path: filePath, error: 'not read: more than ' + req.maxEntries + ' entries in ' + req.dir }); break; }
        let fd;
        try { fd = fs.openSync(path.join(at, e.name, req.name), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK); }
        catch (err) {
          if (err.code === 'ENOENT' || err.code === 'ENOTDIR') continue;
          files.push({ path: filePath, error: err.code === 'ELOOP' ? 'is a symlink; not followed' : err.message });
          continue;
        }
        try {
          const stat = fs.fstatSync(fd);
          if (!stat.isFile()) { files.push({ path: filePath, error: 'is not a regular file' }); continue; }
          if (stat.size > req.maxBytes) { files.push({ path: filePath, error: 'is ' + stat.size + ' bytes, above the limit of ' + req.maxBytes + ' bytes' }); continue; }
          const buf = Buffer.alloc(stat.size);
          let n = 0;
          while (n < buf.length) { const r = fs.readSync(fd, buf, n, buf.length - n, n); if (r === 0) break; n += r; }
          files.push({ path: filePath, content: buf.subarray(0, n).toString('utf8') });
        } finally { fs.closeSync(fd); }
      }
      return { files };
    }
    default:
      throw new Error('unknown operation ' + req.op);
  }
}
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', () => {
  let answer;
  try { answer = { ok: run(JSON.parse(input)) }; } catch (e) { answer = { error: e.code === 'ENOENT' ? 'no such file or directory' : e.code === 'ELOOP' ? 'is a symlink' : e.message }; }
  process.stdout.write(JSON.stringify(answer));
});
`;

/**
 * How Node runs the small scripts of ours inside a run's sandbox: without its JIT, whose code
 * range Node 24 reserves at start (about 600 MiB of address space), so they start under a run's
 * per-process data limit (AGENT_SANDBOX_MEMORY_MB) however low it is set.
 */
export const SMALL_SCRIPT_FLAGS = ['--jitless'];

export function workspaceFiles(processes: RunProcesses, nodePath: string = process.execPath): WorkspaceFiles {
  async function call<T>(request: Record<string, unknown>): Promise<T> {
    const stdout = await processes.exec(
      [nodePath, ...SMALL_SCRIPT_FLAGS, '-e', FILES_HELPER_SOURCE, processes.workspacePath],
      {
        input: JSON.stringify(request),
        maxBuffer: MAX_READ_BYTES * 2,
        timeoutMs: 120_000,
      },
    );
    const answer = JSON.parse(stdout) as { ok?: T; error?: string };
    if (answer.error !== undefined) throw new WorkspaceFileError(answer.error);
    return answer.ok as T;
  }
  return {
    async read(file, maxBytes = MAX_READ_BYTES) {
      return (await call<{ content: string }>({ op: 'read', path: file, maxBytes })).content;
    },
    async readBytes(file, maxBytes) {
      return Buffer.from((await call<{ base64: string }>({ op: 'readbytes', path: file, maxBytes })).base64, 'base64');
    },
    async write(file, content) {
      return (await call<{ bytes: number }>({ op: 'write', path: file, content })).bytes;
    },
    async writeBytes(file, content) {
      return (
        await call<{ bytes: number }>({
          op: 'write',
          path: file,
          content: content.toString('base64'),
          encoding: 'base64',
        })
      ).bytes;
    },
    async list(dir) {
      return (await call<{ entries: { name: string; dir: boolean }[] }>({ op: 'list', path: dir })).entries;
    },
    async isDirectory(dir) {
      return (await call<{ dir: boolean }>({ op: 'isdir', path: dir })).dir;
    },
    async filesInSubdirectories(repo, dir, fileName, { maxBytes, maxEntries }) {
      return (
        await call<{ files: { path: string; content?: string; error?: string }[] }>({
          op: 'subdirfiles',
          repo,
          dir,
          name: fileName,
          maxBytes,
          maxEntries,
        })
      ).files;
    },
    async skillFiles(repo, skillDirs) {
      return (await call<{ skills: { skillPath: string; content: string }[] }>({ op: 'skills', repo, dirs: skillDirs }))
        .skills;
    },
  };
}
