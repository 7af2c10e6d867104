import { z } from './zod';

/**
 * Fields the official clients send that ask for what this service does not have. They are
 * accepted when they ask for nothing (null, false, "", [], or an object of such values) and are
 * 400 `feature_not_available` otherwise (api/unsupported-fields.ts); the OpenAPI document shows
 * exactly the accepted forms, `Nothing` being that recursive "asks for nothing".
 */
export const NOTHING_SCHEMA_NAME = 'Nothing';
const NOTHING = { $ref: `#/components/schemas/${NOTHING_SCHEMA_NAME}` };

/** The JSON Schema of a value that asks for nothing. */
export const NOTHING_JSON_SCHEMA = {
  description: 'A value that asks for nothing: null, false, "", [], or an object whose values all ask for nothing.',
  anyOf: [
    { type: 'null' },
    { const: false },
    { const: '' },
    { type: 'array', maxItems: 0 },
    { type: 'object', additionalProperties: NOTHING },
  ],
} as const;

const why = (text: string) => `Not available on this service (${text}); accepted only when it asks for nothing.`;

/** An object (a map of settings) this service cannot honour. */
export const unavailableMap = (text: string) =>
  z
    .record(z.string(), z.unknown())
    .nullish()
    .openapi({ additionalProperties: NOTHING, description: why(text) });

/** A list this service cannot honour: null or empty. */
export const unavailableList = <T extends z.ZodType>(item: T, text: string) =>
  z
    .array(item)
    .nullish()
    .openapi({ maxItems: 0, description: why(text) });

/** A string setting this service cannot honour: null or empty. */
export const unavailableString = (max: number, text: string) =>
  z
    .string()
    .max(max)
    .nullish()
    .openapi({ maxLength: 0, description: why(text) });

/** An enum this service cannot honour: null only. */
export const unavailableChoice = <const T extends readonly [string, ...string[]]>(values: T, text: string) =>
  z
    .enum(values)
    .nullish()
    .openapi({ type: 'null', enum: undefined, description: why(text) });
