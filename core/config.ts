/**
 * The service's configuration, from environment variables. Each variable is declared once, in
 * `core/config/*-variables.ts` (its parser and default, meaning and readers); `Config` is what
 * `loadConfig` builds from them, and `npm run config:docs` writes docs/configuration.md and
 * .env.example from the same declarations.
 */
export {
  loadConfig,
  type Config,
  type ObjectStoreConfig,
  type SandboxConfig,
  type StreamCaps,
  type TracingConfig,
} from './config/load';
export { ConfigError } from './config/parsers';
