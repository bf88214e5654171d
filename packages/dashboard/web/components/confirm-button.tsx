import { useEffect, useRef, useState } from 'react';

/**
 * A destructive action behind a second, explicit step: the first press asks, "Yes" does it. Focus moves
 * to the question's Cancel button and back, so keyboard users always know where they are.
 */
export function ConfirmButton(props: {
  label: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => Promise<void> | void;
}) {
  const [asking, setAsking] = useState(false);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const openRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) cancelRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" className="danger small" ref={openRef} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span className="confirm">
      <span>{props.question}</span>
      <button
        type="button"
        className="danger small"
        onClick={async () => {
          await props.onConfirm();
          setAsking(false);
        }}
      >
        {props.confirmLabel}
      </button>
      <button type="button" className="secondary small" ref={cancelRef} onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
