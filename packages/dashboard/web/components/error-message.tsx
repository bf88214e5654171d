import { ApiError } from '../api.ts';

/** An error answer shown next to what caused it, with the per-field details of INVALID_PARAMETERS. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const apiError = error instanceof ApiError ? error : undefined;
  const message = apiError?.message ?? (error instanceof Error ? error.message : String(error));
  const details = Object.entries(apiError?.details ?? {});
  return (
    <div className="error" role="alert">
      <p>{message}</p>
      {details.length > 0 && (
        <ul>
          {details.map(([field, rule]) => (
            <li key={field}>
              {field} {rule}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
