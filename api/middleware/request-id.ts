import type { Middleware } from 'koa';
import { newOpaqueId } from '../../core/ids';

/** Echoes a sane `x-request-id` from the caller or makes one; every response carries it. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = /^[\x21-\x7e]{1,128}$/.test(incoming) ? incoming : newOpaqueId();
    ctx.state.requestId = id;
    ctx.set('x-request-id', id);
    await next();
  };
}
