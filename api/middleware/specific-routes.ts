import type { Middleware } from 'koa';

interface MatchedLayer {
  methods: string[];
  paramNames: unknown[];
}

/**
 * Of the routes a path matched, keeps the most specific (fewest parameters), so that a literal
 * segment beats a parameter: `/agent/factories/validate` is that action, not a factory named
 * "validate", and its `Allow` lists the action's methods only. Middleware layers stay.
 */
export function keepMostSpecificRoutes(ctx: object): void {
  const state = ctx as { matched?: MatchedLayer[] };
  const routes = state.matched?.filter((layer) => layer.methods.length > 0) ?? [];
  if (routes.length === 0) return;
  const fewest = Math.min(...routes.map((layer) => layer.paramNames.length));
  state.matched = state.matched!.filter((layer) => layer.methods.length === 0 || layer.paramNames.length === fewest);
}

/**
 * After a router's `allowedMethods()`: when no route took the method (OPTIONS, or a method the
 * path lacks), `Allow` is computed from the most specific routes only.
 */
export function preferSpecificRoutes(): Middleware {
  return async (ctx, next) => {
    keepMostSpecificRoutes(ctx);
    await next();
  };
}
