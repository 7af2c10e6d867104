import Router from '@koa/router';
import type { Config } from '../../core/config';
import { listModels } from '../../services/platform/model-list';
import { rejectQueryParameters } from '../validate';

/**
 * What this deployment offers, whoever asks: `GET /agent/models` (the models a run can name) and
 * `GET /networking/egress-ranges` (the networks runs' traffic leaves from, for allowlists).
 */
export function createPlatformRouter({ config }: { config: Config }): Router {
  const router = new Router();
  router.get('/agent/models', (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = listModels(config);
  });
  router.get('/networking/egress-ranges', (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = { cidrs: config.network.egressCidrs };
  });
  return router;
}
