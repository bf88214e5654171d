import type { LightMyRequestResponse } from 'fastify';
import { bearer, type TestGateway } from './test-gateway.ts';

/** Calls the API of one gateway as a caller with an API key would. */
export function callerOf(gw: TestGateway) {
  return {
    post: (
      key: string,
      url: string,
      payload: unknown,
      headers: Record<string, string> = {},
    ): Promise<LightMyRequestResponse> =>
      gw.app.inject({
        method: 'POST',
        url,
        headers: { ...bearer(key), ...headers },
        payload: payload as object,
      }),
    get: (key: string, url: string): Promise<LightMyRequestResponse> =>
      gw.app.inject({ method: 'GET', url, headers: bearer(key) }),
  };
}

export type ApiCaller = ReturnType<typeof callerOf>;

/**
 * One call to the API as the caller with `key`: the status and the parsed JSON body, whose fields a
 * test reads as it checks them.
 */
export async function callAs(
  gw: TestGateway,
  key: string,
  method: 'GET' | 'POST',
  url: string,
  payload?: object,
) {
  const res = await gw.app.inject({
    method,
    url,
    headers: bearer(key),
    ...(payload === undefined ? {} : { payload }),
  });
  return { status: res.statusCode, body: res.json() };
}
