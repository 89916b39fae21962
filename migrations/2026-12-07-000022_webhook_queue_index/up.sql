-- The claim of due deliveries walks the pending ones in event order and stops at the first
-- batch whose object has no earlier pending delivery: one index gives the order, the other
-- answers "an earlier pending delivery of this endpoint and object?" with one probe. Before,
-- the planner could only filter the pending ones by (status, next_at), sort them, and probe
-- each for earlier ones; with statistics lagging a burst of events (10,000 pending, not yet
-- analyzed) that became a nested loop over the whole queue for every row: 28 s per claim.
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (status, seq);
DROP INDEX webhook_deliveries_order;
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, object_id, status, seq);
