/**
 * What an API key may do beyond the plan's features. A key without scopes calls every route its
 * account's plan grants; `admin` also reads and sets the account's spend policies (services/spending/),
 * so the key handed to an agent can be one that cannot lift its own limits.
 */
export const API_KEY_SCOPES = ['admin'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export function isApiKeyScope(value: string): value is ApiKeyScope {
  return (API_KEY_SCOPES as readonly string[]).includes(value);
}

/** As stored: space-separated; unknown words (a newer version's) are ignored, never widened. */
export function parseScopes(text: string): ApiKeyScope[] {
  return text.split(' ').filter(isApiKeyScope);
}
