/**
 * The x402 extensions protect() declares in its 402, completed as a stock resource server completes
 * them: a `bazaar` declaration (the stock `declareDiscoveryExtension`) of an HTTP input states no method,
 * which `bazaarResourceServerExtension` fills in from the route in a stock seller. protect() fills in GET,
 * or POST for an input with a body (`bodyType`); a method the declaration states is kept.
 */
export function declaredExtensions(extensions: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const bazaar = objectOr(extensions.bazaar);
  const info = objectOr(bazaar?.info);
  const input = objectOr(info?.input);
  if (bazaar === undefined || info === undefined || input === undefined) return { ...extensions };
  if (input.type !== 'http' || input.method !== undefined) return { ...extensions };
  const method = input.bodyType === undefined ? 'GET' : 'POST';
  return { ...extensions, bazaar: { ...bazaar, info: { ...info, input: { ...input, method } } } };
}

function objectOr(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
