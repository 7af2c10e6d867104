import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SANDBOX_HOME } from './sandbox-paths';

/** Global git configuration of the platform's clones, in every sandbox's /etc. */
export const CLONE_GITCONFIG = 'agent-runs-clone.gitconfig';
/** The uid and gid the run's processes have inside their user namespace. */
export const INNER_ID = '1000';

/** Writes the sandbox's own /etc files (passwd, group, hosts, hostname, the clones' gitconfig) into `etcDir`. */
export async function writeSandboxEtc(etcDir: string): Promise<void> {
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/bin/bash\nagent:x:${INNER_ID}:${INNER_ID}:agent:${SANDBOX_HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nagent:x:${INNER_ID}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n',
    hostname: 'sandbox\n',
    // The platform's clones read the operator's mirror, whoever owns it (git 2.39 honours
    // safe.directory only in global configuration).
    [CLONE_GITCONFIG]: '[safe]\n\tdirectory = *\n',
  };
  for (const [name, content] of Object.entries(files)) {
    await writeFile(path.join(etcDir, name), content, { mode: 0o644 });
  }
}
