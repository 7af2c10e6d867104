/** A request about keys the rules refuse (nothing changed); its message says what to change. */
export class KeyRequestError extends Error {}

/** An `agentUid` that names no agent identity. */
export class UnknownAgentError extends KeyRequestError {}
