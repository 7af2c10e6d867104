import { ApiError } from './api-error';

/**
 * A field the official clients send that this service recognises but cannot honour. `given`
 * says whether the request really asks for it (null, false, "" and empty lists ask for nothing).
 */
export interface UnsupportedField {
  path: string;
  value: unknown;
  why: string;
  given?: (value: unknown) => boolean;
}

const asksForSomething = (value: unknown): boolean => {
  if (value === undefined || value === null || value === false || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.values(value).some(asksForSomething);
  return true;
};

/** 400 `feature_not_available` naming the first field asked for, and why. */
export function rejectUnsupported(fields: UnsupportedField[]): void {
  for (const field of fields) {
    if ((field.given ?? asksForSomething)(field.value)) {
      throw new ApiError('feature_not_available', `\`${field.path}\` is not available on this service: ${field.why}`);
    }
  }
}
