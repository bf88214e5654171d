import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';

/** Keys that document a schema but do not change its type: left out so prose edits need no regeneration. */
const PROSE_KEYS = new Set(['description', 'summary', 'title', 'examples', 'example', 'tags']);

export const GENERATED_TYPES_PATH = new URL('../../src/generated/openapi-types.ts', import.meta.url);

const HEADER = `// Generated from the gateway's served /openapi.json by \`npm run generate -w packages/client\`.
// Do not edit: packages/client/test/openapi-sdk.test.ts fails when this differs from what the gateway serves.
`;

/**
 * The TypeScript types (openapi-typescript's `paths` and `components`) of a served OpenAPI document.
 * Prose is dropped and paths are sorted, so the result changes only when a type or an operation does.
 */
export async function typesFromOpenApi(document: unknown): Promise<string> {
  const shape = withoutProse(document) as OpenAPI3;
  const paths = shape.paths ?? {};
  shape.paths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  const ast = await openapiTS(shape, { alphabetize: true, exportType: false });
  return HEADER + astToString(ast);
}

function withoutProse(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutProse);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (PROSE_KEYS.has(key) && typeof value !== 'object') continue;
    if (PROSE_KEYS.has(key) && Array.isArray(value)) continue;
    // `properties` maps field names to schemas: a field may be called "description".
    out[key] = key === 'properties' ? mapValues(value, withoutProse) : withoutProse(value);
  }
  return out;
}

function mapValues(value: unknown, f: (v: unknown) => unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, f(v)]));
}
