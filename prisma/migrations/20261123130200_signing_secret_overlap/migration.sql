-- Signing-secret rotation with overlap: the secret a rotation replaced keeps signing deliveries
-- (beside the new one) until previous_secret_valid_until.
ALTER TABLE organizations
  ADD COLUMN previous_signing_secret TEXT,
  ADD COLUMN previous_secret_valid_until TIMESTAMPTZ(3);
