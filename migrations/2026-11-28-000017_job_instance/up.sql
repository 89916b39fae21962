-- The instance that took a running job (its advisory lock's number, as claims record it): a job
-- whose instance died is taken over at once instead of after its lease.
ALTER TABLE jobs ADD COLUMN instance integer;
