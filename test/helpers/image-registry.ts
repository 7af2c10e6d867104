import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Debian's packages the image tests need (`.ci/run` installs them). */
export const IMAGE_TOOLS = {
  skopeo: '/usr/bin/skopeo',
  umoci: '/usr/bin/umoci',
  registry: '/usr/bin/docker-registry',
  busybox: '/bin/busybox',
};

export function missingImageTools(): string[] {
  return Object.values(IMAGE_TOOLS).filter((p) => !existsSync(p));
}

export interface LocalRegistry {
  /** `127.0.0.1:<port>`, as image references name it. */
  host: string;
  /** How many manifest and blob requests it served (from its access log). */
  requests(): string[];
  stop(): Promise<void>;
}

/**
 * The CNCF distribution registry (Debian's docker-registry) on a random loopback port, plain
 * HTTP, optionally behind basic auth.
 */
export async function startRegistry(options: { user?: string; password?: string } = {}): Promise<LocalRegistry> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'agent-runs-registry-'));
  let auth = '';
  if (options.user && options.password) {
    const { stdout } = await run('python3', [
      '-W',
      'ignore',
      '-c',
      'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))',
      options.password,
    ]);
    await writeFile(path.join(dir, 'htpasswd'), `${options.user}:${stdout.trim()}\n`);
    auth = `auth:\n  htpasswd:\n    realm: test\n    path: ${path.join(dir, 'htpasswd')}\n`;
  }
  await writeFile(
    path.join(dir, 'config.yml'),
    `version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: ${path.join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:0\n  secret: test\n${auth}`,
  );
  const child: ChildProcess = spawn(IMAGE_TOOLS.registry, ['serve', path.join(dir, 'config.yml')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  const host = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        log.push(line);
        const listening = /listening on 127\.0\.0\.1:(\d+)/.exec(line);
        if (listening) resolve(`127.0.0.1:${listening[1]}`);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`docker-registry exited with ${code}: ${log.join('\n')}`)));
  });
  return {
    host,
    requests: () =>
      log.filter(
        (l) =>
          /"(GET|HEAD) \/v2\/[^"]*(manifests|blobs)/.test(l) || /http.request.uri="\/v2\/.*(manifests|blobs)/.test(l),
      ),
    async stop() {
      const exited = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGKILL');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A file of the image: text, a copy of a host file, or a symlink. */
export type ImageFile = { text: string } | { copy: string } | { symlink: string };

/**
 * Builds a one-layer OCI image with umoci (files, `Env`, `WorkingDir`) and pushes it to
 * `reference` with skopeo; returns its digest as the registry serves it.
 */
export async function pushImage(
  reference: string,
  files: Record<string, ImageFile>,
  options: { env?: string[]; workingDir?: string; creds?: string } = {},
): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'agent-runs-image-'));
  try {
    const layout = path.join(dir, 'layout');
    await run(IMAGE_TOOLS.umoci, ['init', '--layout', layout]);
    await run(IMAGE_TOOLS.umoci, ['new', '--image', `${layout}:base`]);
    await run(IMAGE_TOOLS.umoci, ['unpack', '--rootless', '--image', `${layout}:base`, path.join(dir, 'bundle')]);
    const rootfs = path.join(dir, 'bundle', 'rootfs');
    for (const [name, file] of Object.entries(files)) {
      const target = path.join(rootfs, name);
      await mkdir(path.dirname(target), { recursive: true });
      if ('text' in file) await writeFile(target, file.text);
      else if ('copy' in file) await copyFile(file.copy, target);
      else await symlink(file.symlink, target);
    }
    await run(IMAGE_TOOLS.umoci, ['repack', '--image', `${layout}:base`, path.join(dir, 'bundle')]);
    const config = ['config', '--image', `${layout}:base`, '--tag', 'built'];
    for (const e of options.env ?? []) config.push('--config.env', e);
    if (options.workingDir) config.push('--config.workingdir', options.workingDir);
    await run(IMAGE_TOOLS.umoci, config);
    await run(IMAGE_TOOLS.skopeo, [
      'copy',
      '--quiet',
      '--dest-tls-verify=false',
      ...(options.creds ? [`--dest-creds=${options.creds}`] : []),
      `oci:${layout}:built`,
      `docker://${reference}`,
    ]);
    const { stdout } = await run(IMAGE_TOOLS.skopeo, [
      'inspect',
      '--tls-verify=false',
      ...(options.creds ? [`--creds=${options.creds}`] : []),
      '--format',
      '{{.Digest}}',
      `docker://${reference}`,
    ]);
    return stdout.trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A static busybox image: `sh` and a few applets, `/etc/os-release` and a marker file. */
export function busyboxFiles(marker: string): Record<string, ImageFile> {
  const files: Record<string, ImageFile> = {
    'bin/busybox': { copy: IMAGE_TOOLS.busybox },
    'etc/os-release': { text: 'ID=agent-runs-test\nNAME="Agent Runs test image"\n' },
    marker: { text: `${marker}\n` },
  };
  for (const applet of ['sh', 'cat', 'ls', 'echo', 'id', 'env', 'pwd', 'grep', 'wc', 'test', 'sleep', 'head', 'wget'])
    files[`bin/${applet}`] = { symlink: 'busybox' };
  return files;
}

/**
 * A merged-/usr glibc image made of the host's own bash and cat with exactly the libraries
 * `ldd` names (the image's loader and libc, not the worker's, run them inside the sandbox).
 */
export async function glibcFiles(osId: string): Promise<Record<string, ImageFile>> {
  const files: Record<string, ImageFile> = {
    bin: { symlink: 'usr/bin' },
    lib: { symlink: 'usr/lib' },
    lib64: { symlink: 'usr/lib64' },
    'etc/os-release': { text: `ID=${osId}\n` },
  };
  for (const program of ['/usr/bin/bash', '/usr/bin/cat']) {
    files[program.slice(1)] = { copy: program };
    const { stdout } = await run('ldd', [program]);
    for (const line of stdout.split('\n')) {
      const library = /=> (\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+ld-linux\S*)/.exec(line)?.[1];
      // Under /usr in the image whatever the host's layout, since /lib and /lib64 link there.
      if (library) files[`usr${library.replace(/^\/usr/, '')}`] = { copy: library };
    }
  }
  return files;
}
