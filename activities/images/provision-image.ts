import type { EntityManager } from 'typeorm';
import { mib, seconds } from '../../core/human-units';
import { isRegistryAllowed, parseImageReference } from '../../core/image-reference';
import { parseRegistryCredential, type RegistryCredential } from '../../core/registry-credentials';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { decryptSecret } from '../../core/secrets';
import { markEnvironmentSetupFailed } from '../../db/environments';
import { listManagedSecretsOfKind } from '../../db/managed-secret-reads';
import { findRunImage, recordRunImage } from '../../db/run-images';
import type { ActivityDeps } from '../deps';
import type { RunImageRoot } from '../sandbox/sandbox';
import { userFailure } from '../user-failure';
import { ImagePullError } from './image-pull-error';
import type { ImageUse } from './image-store';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** Variables an image may not set for a run's commands: the sandbox's network rules. */
const PROXY_VARIABLES = /^(?:https?_proxy|all_proxy|no_proxy)$/i;

/**
 * Gives the run its environment's image as the root of its commands: resolves the reference
 * (or reuses the digest the run was first provisioned on), pulls it into the cache if need be,
 * records the digest on the run, and tells the run's timeline what it got. Returns the digest.
 */
export async function provisionRunImage(
  deps: ActivityDeps,
  input: {
    runId: string;
    run: { team_id: string; config: ResolvedAgentConfig };
    environment: { uid: string; reference: string };
    signal: AbortSignal;
    say(message: string): Promise<void>;
  },
): Promise<string> {
  const { dataSource, config, sandbox, images, secretsKeyring } = deps;
  const { runId, run, environment, say } = input;
  const fail = async (code: string, message: string) => {
    await markEnvironmentSetupFailed(dataSource.manager, environment.uid, true);
    return userFailure(`${code}: ${message}`, 'environment_setup_failed');
  };
  if (sandbox.kind === 'none' || !sandbox.useImage) {
    throw await fail(
      'image_unsupported',
      `environment ${environment.uid} names the image ${environment.reference}, and images need the sandbox: this worker runs with AGENT_SANDBOX=none.`,
    );
  }
  const harness = run.config.harness?.type;
  if (harness && harness !== 'oz') {
    throw await fail(
      'image_unsupported',
      `the ${harness} harness does not run on an environment's image yet (its CLI needs the worker's Node.js inside the sandbox); use the oz harness with this environment, or an environment without docker_image.`,
    );
  }
  const parsed = parseImageReference(environment.reference);
  if (!parsed.ok) throw await fail('image_unsupported', `the image ${environment.reference} ${parsed.problem}.`);
  const { image } = parsed;
  if (!isRegistryAllowed(image.registry, config.workspace.imageAllowedRegistries)) {
    throw await fail(
      'image_registry_not_allowed',
      `the image ${environment.reference} comes from ${image.registry}, which IMAGE_ALLOWED_REGISTRIES no longer lists; change the environment's docker_image.`,
    );
  }
  const pinned = await findRunImage(dataSource.manager, runId);
  const credential = await registryCredential(dataSource.manager, secretsKeyring, run.team_id, image.registry);
  let use: ImageUse;
  const progress: Promise<void>[] = [];
  try {
    use = await images.use({
      runId,
      text: environment.reference,
      image,
      pinnedDigest: pinned?.reference === environment.reference ? pinned.digest : undefined,
      credential: credential?.value,
      signal: input.signal,
      onProgress: (message) => progress.push(say(message)),
    });
  } catch (err) {
    if (!(err instanceof ImagePullError)) throw err;
    const hint =
      err.problem === 'pull_unauthorized'
        ? credential
          ? ` The registry refused the team's credential (the registry_credentials secret ${credential.name}).`
          : ` The team has no credential for ${image.registry}: store one with POST /agent/secrets, kind registry_credentials.`
        : '';
    throw await fail(err.code, `could not use the image ${environment.reference}: ${err.message}.${hint}`);
  } finally {
    await Promise.all(progress);
  }
  const { digest } = use.image;
  await recordRunImage(dataSource.manager, runId, { reference: environment.reference, digest });
  await sandbox.useImage(runId, imageRoot(use));
  const origin = use.cached
    ? "already in this worker's image cache"
    : `pulled in ${seconds(use.pullMs ?? 0)} and unpacked in ${seconds(use.unpackMs ?? 0)}`;
  await say(
    [
      `Image ${environment.reference} is ${digest} (${use.image.platform}, ${mib(use.image.diskBytes)} unpacked), ${origin}.`,
      `Commands run on it as the sandbox's user in /workspace; the image's own user (${use.image.user}) and working directory (${use.image.workingDir}) are not used.`,
      ...(use.evicted.length ? [`Removed from the cache to make room: ${use.evicted.join(', ')}.`] : []),
    ].join(' '),
  );
  return digest;
}

function imageRoot(use: ImageUse): RunImageRoot {
  const env: Record<string, string> = {};
  let imagePath: string | undefined;
  for (const entry of use.image.env) {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at);
    const value = entry.slice(at + 1);
    if (name === 'PATH') imagePath = value;
    else if (name && !PROXY_VARIABLES.test(name)) env[name] = value;
  }
  return { digest: use.image.digest, rootfs: use.image.rootfs, env, ...(imagePath ? { path: imagePath } : {}) };
}

/** The team's credential for a registry (a managed secret of kind registry_credentials), if it has one. */
async function registryCredential(
  manager: EntityManager,
  secretsKeyring: SecretsKeyring,
  teamId: string,
  registry: string,
): Promise<{ name: string; value: RegistryCredential } | undefined> {
  for (const secret of await listManagedSecretsOfKind(manager, teamId, 'registry_credentials')) {
    const value = parseRegistryCredential(decryptSecret(secret.encryptedValue, secretsKeyring));
    if (value && isRegistryAllowed(registry, [value.registry]))
      return { name: secret.name, value: { ...value, registry } };
  }
  return undefined;
}
