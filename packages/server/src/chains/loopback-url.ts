import { ConfigError } from '../config.ts';

/**
 * The URL of an embedded chain a running gateway started on `port` of this machine, for tools that
 * reach it from another process. Its ports are fixed by configuration; with 0 the server picked one
 * nobody else can know.
 */
export function loopbackUrl(variable: string, port: number): string {
  if (port === 0) {
    throw new ConfigError([
      `${variable}: is 0 (any free port), so the faucet cannot find the chain; set the port the server uses`,
    ]);
  }
  return `http://127.0.0.1:${port}`;
}
