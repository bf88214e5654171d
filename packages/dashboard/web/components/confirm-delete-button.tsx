import { useEffect, useRef, useState } from 'react';

/**
 * Deleting behind a second, explicit step: "Delete" asks `question`, "Yes, delete" does it. Focus moves to
 * the question's Cancel button, so keyboard users always know where they are. The one delete control of
 * the dashboard (API keys, webhook endpoints), so every delete asks the same way.
 */
export function ConfirmDeleteButton(props: { question: string; onDelete: () => Promise<void> | void }) {
  const [asking, setAsking] = useState(false);
  const cancelRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) cancelRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" className="danger small" onClick={() => setAsking(true)}>
        Delete
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
          await props.onDelete();
          setAsking(false);
        }}
      >
        Yes, delete
      </button>
      <button type="button" className="secondary small" ref={cancelRef} onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
