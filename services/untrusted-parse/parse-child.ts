import { serveJobs } from '../../infra/isolated-child-serve';
import { PARSE_JOBS } from './parse-jobs';

// The parse child's entry (untrusted-parser.ts starts it): `node [--import tsx] parse-child.{ts,js}`.
// The YAML library makes an Error of each problem it finds, and only their messages leave this
// process: their stack traces were two thirds of what a file made of 200,000 problems cost.
Error.stackTraceLimit = 0;
serveJobs(PARSE_JOBS);
