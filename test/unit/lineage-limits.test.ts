import type { EntityManager } from 'typeorm';
import { ApiError } from '../../core/api-error';
import { resolveParent } from '../../services/runs/create-request';
import { checkLineage } from '../../services/runs/lineage-limits';

const TEAM = '00000000-0000-7000-8000-000000000001';

/**
 * A stand-in for the database: the run tree as a map of run to parent, answering the queries of
 * db/run-lineage-reads.ts and db/run-reads.ts by what they ask for. No PostgreSQL.
 */
function treeManager(parents: Record<string, string | null>, teamId = TEAM) {
  const asked: string[] = [];
  const depthOf = (runId: string): number => {
    const parent = parents[runId];
    return parent ? depthOf(parent) + 1 : 0;
  };
  const manager = {
    query(sql: string, params: unknown[]) {
      const [runId] = params as [string];
      if (sql.includes('FROM run_lineage WHERE run_id')) {
        asked.push('depth');
        return Promise.resolve([{ depth: depthOf(runId) }]);
      }
      if (sql.includes('count(*)') && sql.includes('parent_run_id')) {
        asked.push('children');
        return Promise.resolve([{ n: Object.values(parents).filter((p) => p === runId).length }]);
      }
      if (sql.includes('FROM runs r WHERE r.run_id')) {
        asked.push('run');
        const found = runId in parents && (params[1] === null || params[1] === teamId);
        return Promise.resolve(found ? [{ run_id: runId, team_id: teamId }] : []);
      }
      throw new Error(`unexpected query: ${sql}`);
    },
  };
  return { manager: manager as unknown as EntityManager, asked };
}

const ROOT = '00000000-0000-7000-8000-0000000000a0';
const CHILD = '00000000-0000-7000-8000-0000000000a1';
const GRANDCHILD = '00000000-0000-7000-8000-0000000000a2';
const tree = { [ROOT]: null, [CHILD]: ROOT, [GRANDCHILD]: CHILD };
const limits = { maxDepth: 2, maxChildrenPerRun: 3 };

describe('checkLineage', () => {
  test('a child is one level below its parent, allowed up to ORCHESTRATION_MAX_DEPTH', async () => {
    expect(await checkLineage(treeManager(tree).manager, ROOT, limits)).toEqual({ ok: true, depth: 1 });
    expect(await checkLineage(treeManager(tree).manager, CHILD, limits)).toEqual({ ok: true, depth: 2 });
  });

  test('one level more is refused with the parent depth and the limit, without counting children', async () => {
    const { manager, asked } = treeManager(tree);
    expect(await checkLineage(manager, GRANDCHILD, limits)).toEqual({
      ok: false,
      limit: 'depth',
      parentDepth: 2,
      max: 2,
    });
    expect(asked).toEqual(['depth']);
  });

  test('a parent may have ORCHESTRATION_MAX_CHILDREN_PER_RUN children, not one more', async () => {
    const twoChildren = { ...tree, x: ROOT };
    expect(await checkLineage(treeManager(twoChildren).manager, ROOT, limits)).toEqual({ ok: true, depth: 1 });
    const threeChildren = { ...twoChildren, y: ROOT };
    expect(await checkLineage(treeManager(threeChildren).manager, ROOT, limits)).toEqual({
      ok: false,
      limit: 'children',
      children: 3,
      max: 3,
    });
  });

  test('depth 0 allows no child at all', async () => {
    expect(await checkLineage(treeManager(tree).manager, ROOT, { maxDepth: 0, maxChildrenPerRun: 3 })).toMatchObject({
      ok: false,
      limit: 'depth',
      parentDepth: 0,
    });
  });
});

describe('resolveParent (parent_run_id on create)', () => {
  const principal = { uid: 'u', type: 'user', displayName: 'U', teamId: TEAM } as const;

  async function refusal(manager: EntityManager, parent: string) {
    try {
      await resolveParent(manager, principal, parent, limits);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return { code: error.code, detail: error.detail };
    }
    throw new Error('expected a refusal');
  }

  test('no parent is a root run, asked of nothing', async () => {
    const { manager, asked } = treeManager(tree);
    expect(await resolveParent(manager, principal, undefined, limits)).toBeNull();
    expect(asked).toEqual([]);
  });

  test('a parent within the bounds is the parent', async () => {
    expect(await resolveParent(treeManager(tree).manager, principal, CHILD, limits)).toBe(CHILD);
  });

  test('a parent that is no run of the team, or no uuid, is refused before the tree is looked at', async () => {
    const { manager, asked } = treeManager(tree, 'another-team');
    expect(await refusal(manager, ROOT)).toEqual({
      code: 'invalid_request',
      detail: `\`parent_run_id\`: no run ${ROOT} in your team.`,
    });
    expect(asked).toEqual(['run']);
    const notUuid = treeManager(tree);
    expect(await refusal(notUuid.manager, 'not-a-uuid')).toEqual({
      code: 'invalid_request',
      detail: '`parent_run_id`: no run not-a-uuid in your team.',
    });
    expect(notUuid.asked).toEqual([]);
  });

  test('each bound says no in its own words, naming its variable', async () => {
    expect(await refusal(treeManager(tree).manager, GRANDCHILD)).toEqual({
      code: 'invalid_request',
      detail: `\`parent_run_id\`: run ${GRANDCHILD} is already 2 level(s) below its root run; this service allows at most 2 (ORCHESTRATION_MAX_DEPTH).`,
    });
    const full = { ...tree, x: ROOT, y: ROOT };
    expect(await refusal(treeManager(full).manager, ROOT)).toEqual({
      code: 'invalid_request',
      detail: `\`parent_run_id\`: run ${ROOT} already has 3 child runs, the most one run may have (ORCHESTRATION_MAX_CHILDREN_PER_RUN).`,
    });
  });
});
