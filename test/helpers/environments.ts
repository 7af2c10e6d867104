import type { TestContext } from './test-context';
import { auth } from './runs';

export async function createEnvironment(
  ctx: TestContext,
  key: string,
  config: Record<string, unknown>,
): Promise<string> {
  const res = await ctx.api.post('/api/v1/agent/environments').set(auth(key)).send({ config });
  if (res.status !== 201) throw new Error(`environment create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { uid: string }).uid;
}
