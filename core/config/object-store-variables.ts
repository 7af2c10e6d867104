import { z } from 'zod';
import { group, optionalString } from './variable';

/** Segments of letters, digits and `._-` separated by `/`, as object keys are (infra/object-store). */
const keySegments = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

/** Where the bytes of runs' files go: a directory, or an S3-compatible bucket. */
export const objectStore = group('Object store', {
  OBJECT_STORE: {
    schema: z.enum(['directory', 's3']).optional(),
    description:
      "where the bytes of runs' files are kept (artifacts, attachments, handoff patches, harnesses' raw event logs; PostgreSQL keeps what describes them): `directory` (`OBJECT_STORE_DIR`: one machine, or a directory every API and worker mounts) or `s3` (a bucket of AWS S3 or of any S3-compatible server, for several machines; credentials from the AWS SDK's default chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or the role of the machine or pod); checked at start with a small object written, read and deleted",
    readBy: ['API', 'workers'],
    unset: '`s3` when `OBJECT_STORE_S3_BUCKET` is set, else `directory`',
  },
  OBJECT_STORE_DIR: {
    schema: optionalString,
    description:
      'the directory of `OBJECT_STORE=directory`; the same one (a shared volume) for the API and every worker',
    readBy: ['API', 'workers'],
    unset: '`{AGENT_RUNS_DATA_DIR}/objects`',
  },
  OBJECT_STORE_S3_BUCKET: {
    schema: optionalString.pipe(
      z
        .string()
        .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a bucket name: 3-63 of a-z, 0-9, `.` and `-`')
        .optional(),
    ),
    description: 'the bucket of `OBJECT_STORE=s3`, made beforehand; the service never creates or deletes buckets',
    readBy: ['API', 'workers'],
    unset: 'unset',
  },
  OBJECT_STORE_S3_PREFIX: {
    schema: optionalString.pipe(
      z
        .string()
        .transform((p) => p.replace(/^\/+|\/+$/g, ''))
        .pipe(
          z
            .string()
            .regex(keySegments, 'must be path segments of A-Z, a-z, 0-9, `.`, `_` and `-`')
            .refine((p) => !p.split('/').some((s) => s === '.' || s === '..'), 'must have no `.` or `..` segment'),
        )
        .optional(),
    ),
    description:
      "the key prefix of every object (say `agent-runs`), so that one bucket can hold several deployments' objects",
    readBy: ['API', 'workers'],
    unset: 'none: keys from the bucket root',
  },
  OBJECT_STORE_S3_ENDPOINT: {
    schema: optionalString.pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional()),
    description: 'the URL of an S3-compatible server that is not AWS (say `http://minio:9000`)',
    readBy: ['API', 'workers'],
    unset: "AWS's endpoint of the region",
  },
  OBJECT_STORE_S3_REGION: {
    schema: optionalString,
    description: "the bucket's region",
    readBy: ['API', 'workers'],
    unset: "the AWS SDK's (AWS_REGION, the profile's); `us-east-1` with `OBJECT_STORE_S3_ENDPOINT`",
  },
  OBJECT_STORE_S3_FORCE_PATH_STYLE: {
    schema: z.enum(['true', 'false']).optional(),
    description:
      '`true`: the bucket in the path (`endpoint/bucket/key`), as most S3-compatible servers want; `false`: in the host name (`bucket.endpoint/key`)',
    readBy: ['API', 'workers'],
    unset: '`true` with `OBJECT_STORE_S3_ENDPOINT`, else `false`',
  },
});
