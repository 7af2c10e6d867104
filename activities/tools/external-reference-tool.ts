import { canonicalReferenceUrl, REFERENCE_TYPE } from '../../core/external-references';
import { optionalText, stringArg, ToolInputError } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';

/**
 * `report_external_reference`: the run says it made something elsewhere (a pull request, an issue,
 * a document). Recorded under its canonical URL, once per run, and listed among the run's artifacts.
 */
export async function reportExternalReference(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  if (!ctx.recordExternalReference) throw new ToolInputError('external references cannot be recorded here');
  let url: string;
  try {
    url = canonicalReferenceUrl(stringArg(args, 'url'));
  } catch (err) {
    throw new ToolInputError((err as Error).message);
  }
  const referenceType = optionalText(args, 'reference_type', 64) ?? 'link';
  if (!REFERENCE_TYPE.test(referenceType)) {
    throw new ToolInputError('reference_type must be a lowercase identifier like pull_request or linear_issue');
  }
  const title = optionalText(args, 'title', 200) ?? null;
  await ctx.recordExternalReference({ url, referenceType, title });
  return { output: `Recorded ${url} as a ${referenceType} of this run.`, isError: false };
}
