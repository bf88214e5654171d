import { type ReactNode, useEffect, useId, useRef } from 'react';
import { CopyButton } from './copy-button.tsx';

/**
 * A secret the gateway answers once and never again (a new API key, a webhook signing secret): the value,
 * a copy button, a warning that says why it must be stored now, and a button to put it away. It takes the
 * focus when it appears, so a screen reader reads it out and a keyboard user lands on it.
 */
export function ShownOnceSecret(props: {
  title: ReactNode;
  /** What the secret is for and where to keep it; "shown only once" is said by the component. */
  advice: ReactNode;
  secret: string;
  copyLabel: string;
  testId: string;
  onDismiss: () => void;
}) {
  const titleId = useId();
  const cardRef = useRef<HTMLElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: focus again for each new secret, not only on mount
  useEffect(() => {
    cardRef.current?.focus();
  }, [props.secret]);
  return (
    <section className="card secret" ref={cardRef} tabIndex={-1} aria-labelledby={titleId}>
      <h2 id={titleId}>{props.title}</h2>
      <p className="warning" role="note">
        Copy it now: it is shown only once and cannot be recovered. {props.advice}
      </p>
      <div className="secret-value">
        <code data-testid={props.testId}>{props.secret}</code>
        <CopyButton text={props.secret} label={props.copyLabel} />
      </div>
      <button type="button" className="secondary" onClick={props.onDismiss}>
        I have stored it
      </button>
    </section>
  );
}
