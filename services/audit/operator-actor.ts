import os from 'node:os';
import type { AuditActor } from '../../core/audit/audit-event';

/** The operator at an operator command (`npm run keys`, …): AUDIT_OPERATOR, else `<OS user>@<host>`. */
export function operatorActor(configured: string | undefined): AuditActor {
  if (configured) return { type: 'operator', uid: configured };
  let user = process.env.USER ?? 'unknown';
  try {
    user = os.userInfo().username;
  } catch {
    // A uid without a passwd entry (some containers): USER, if set, names it.
  }
  return { type: 'operator', uid: `${user}@${os.hostname()}` };
}
