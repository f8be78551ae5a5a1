/** Where a delivery goes (an event's, a cron job's, a test's): a URL, required. */
export function DestinationField({
  id,
  value,
  onChange,
}: {
  id: string;
  value: string;
  onChange: (destination: string) => void;
}) {
  return (
    <>
      <label htmlFor={id}>Destination</label>
      <input
        id={id}
        type="url"
        required
        placeholder="https://example.com/webhooks/punctual"
        value={value}
        onChange={(event) => onChange(event.target.value)}
      />
    </>
  );
}
