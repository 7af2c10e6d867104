import { serveJobs } from '../../infra/isolated-child-serve';
import { PARSE_JOBS } from './parse-jobs';

/** The parse child's entry (untrusted-parser.ts starts it): `node [--import tsx] parse-child.{ts,js}`. */
serveJobs(PARSE_JOBS);
