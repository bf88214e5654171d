import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifySchemaValidationError } from 'fastify';
import type { ErrorDetails } from '../../domain/gateway-error.ts';
import { addressKeyword } from './address-keyword.ts';

/**
 * Schema validation for every route. Bodies are validated strictly: JSON types are not coerced (an
 * amount sent as "5" is wrong, not 5) and unknown fields are refused rather than dropped, so a typo
 * cannot silently lose a field. Query strings and path parameters arrive as text and are coerced.
 */
const COMMON: Options = {
  allErrors: true, // report every bad field at once; bodies are size-bounded, so this stays cheap
  verbose: true, // keeps the failing schema, to word rules such as "must be between 0.001 and 100"
  removeAdditional: false,
  useDefaults: true,
  strict: false, // allow OpenAPI-only keywords (example, x-error) in route schemas
};

export function installValidation(app: FastifyInstance): void {
  const strict = withFormats(new Ajv({ ...COMMON, coerceTypes: false }));
  const coercing = withFormats(new Ajv({ ...COMMON, coerceTypes: 'array' }));
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema as object),
  );
}

function withFormats(ajv: Ajv): Ajv {
  (addFormats as unknown as (a: Ajv) => Ajv)(ajv);
  ajv.addKeyword({ keyword: 'x-error', schemaType: 'string' });
  ajv.addKeyword(addressKeyword);
  return ajv;
}

/** Turns validation errors into `details`: one entry per field, worded as the rule it breaks. */
export function validationDetails(errors: readonly FastifySchemaValidationError[]): ErrorDetails {
  const details: Record<string, string> = {};
  for (const error of errors as readonly ErrorObject[]) {
    const field = fieldOf(error);
    // An anyOf failure comes after its branches' failures and states the whole rule; it wins.
    if (error.keyword === 'anyOf') details[field] = ruleOf(error);
    else details[field] ??= ruleOf(error);
  }
  return details;
}

function fieldOf(error: ErrorObject): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
  const child =
    error.keyword === 'required'
      ? (error.params as { missingProperty: string }).missingProperty
      : error.keyword === 'additionalProperties'
        ? (error.params as { additionalProperty: string }).additionalProperty
        : undefined;
  if (child !== undefined) return path === '' ? child : `${path}.${child}`;
  return path === '' ? 'body' : path;
}

function ruleOf(error: ErrorObject): string {
  const schema = (error.parentSchema ?? {}) as Record<string, unknown>;
  if (error.keyword === 'required') return 'is required';
  if (error.keyword === 'additionalProperties') return 'is not a known field';
  if (typeof schema['x-error'] === 'string') return schema['x-error'];
  switch (error.keyword) {
    case 'type':
      return `must be ${article((error.params as { type: string }).type)}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return rangeRule(schema);
    case 'minLength':
    case 'maxLength':
      return lengthRule(schema);
    case 'enum':
      return `must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
    case 'anyOf': {
      const branches = (schema.anyOf ?? []) as { const?: unknown }[];
      if (branches.every((b) => b.const !== undefined)) {
        return `must be one of ${branches.map((b) => String(b.const)).join(', ')}`;
      }
      return 'does not match any allowed form';
    }
    case 'const':
      return `must be ${String((error.params as { allowedValue: unknown }).allowedValue)}`;
    case 'format':
      return `must be a valid ${(error.params as { format: string }).format}`;
    case 'pattern':
      return 'has an invalid format';
    case 'maxProperties':
      return `must have at most ${String(schema.maxProperties)} fields`;
    case 'maxItems':
      return `must have at most ${String(schema.maxItems)} items`;
    default:
      return error.message ?? 'is invalid';
  }
}

function rangeRule(schema: Record<string, unknown>): string {
  const min = schema.minimum ?? schema.exclusiveMinimum;
  const max = schema.maximum ?? schema.exclusiveMaximum;
  if (min !== undefined && max !== undefined) return `must be between ${String(min)} and ${String(max)}`;
  if (schema.exclusiveMinimum !== undefined) return `must be greater than ${String(min)}`;
  if (min !== undefined) return `must be at least ${String(min)}`;
  if (schema.exclusiveMaximum !== undefined) return `must be less than ${String(max)}`;
  return `must be at most ${String(max)}`;
}

function lengthRule(schema: Record<string, unknown>): string {
  const min = schema.minLength as number | undefined;
  const max = schema.maxLength as number | undefined;
  if (min !== undefined && max !== undefined) return `must be ${min} to ${max} characters`;
  if (min !== undefined) return `must be at least ${min} characters`;
  return `must be at most ${String(max)} characters`;
}

function article(type: string): string {
  const word = type.replaceAll(',', ' or ');
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}
