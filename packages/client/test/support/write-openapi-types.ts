// Regenerates src/generated/openapi-types.ts from the document a gateway serves:
// the one at GATE402_URL, or else one started in-process for the occasion.
import { writeFileSync } from 'node:fs';
import { startGateway } from './gateway.ts';
import { GENERATED_TYPES_PATH, typesFromOpenApi } from './openapi-types.ts';

const given = process.env.GATE402_URL;
const gateway = given === undefined ? await startGateway() : undefined;
try {
  const response = await fetch(new URL('/openapi.json', given ?? gateway?.url));
  if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
  writeFileSync(GENERATED_TYPES_PATH, await typesFromOpenApi(await response.json()));
  console.log(`wrote ${GENERATED_TYPES_PATH.pathname}`);
} finally {
  await gateway?.close();
}
