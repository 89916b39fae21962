DROP INDEX webhook_deliveries_order;
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, object_id, seq);
DROP INDEX webhook_deliveries_queue;
