/**
 * A skill spec: `owner/repo:skill-name` or `owner/repo:path/to/SKILL.md`. Owner and repo are path
 * parts of a clone URL, so `.` and `..` are refused like any bad character.
 */
export const SKILL_SPEC_RE =
  /^(?!\.\.?\/)[A-Za-z0-9_.-]+\/(?!\.\.?:)[A-Za-z0-9_.-]+:(?:[A-Za-z0-9_.-]+|(?:[A-Za-z0-9_.-]+\/)*SKILL\.md)$/;

export const SKILL_SPEC_RULE = 'must be `owner/repo:skill-name` or `owner/repo:path/to/SKILL.md`';
