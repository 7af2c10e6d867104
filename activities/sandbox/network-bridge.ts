/** The port inside every sandbox's own loopback where the egress proxy's bridge listens. */
export const BRIDGE_PORT = 3128;

/** The port inside a sandbox's loopback where a harness reaches the worker's model gateway. */
export const GATEWAY_BRIDGE_PORT = 3129;

/** A Unix socket inside the sandbox, offered as a TCP port on the sandbox's loopback. */
export interface BridgedSocket {
  socketPath: string;
  port: number;
}

/** sandbox-init's `-bridge`: `socket=port` pairs joined by `;` (the platform picks the paths). */
export function bridgeMappings(sockets: BridgedSocket[]): string {
  return sockets.map((s) => `${s.socketPath}=${s.port}`).join(';');
}
