import type { z } from 'zod';

/**
 * `T` when a value of type `T` (what a route builds) is valid for schema `S` (what the document
 * says it answers); a compile error otherwise, so the two cannot drift apart.
 */
export type Fits<S extends z.ZodType, T extends z.input<S>> = T;
